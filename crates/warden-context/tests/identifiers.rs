//! The extractor against a hand-labelled fixture: recall at least 95% and precision at least
//! 90%, over every kind together and for each kind with twenty or more labels.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};

use warden_context::extract;

#[test]
fn recall_and_precision_on_the_labelled_fixture() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("fixtures/identifiers.json")).unwrap();
    // Per kind: (labelled, found among labelled, reported, reported correctly).
    let mut per_kind: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut extra = Vec::new();
    for case in &cases {
        let text = case["text"].as_str().unwrap();
        let labelled: HashSet<(String, String)> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let found: HashSet<(String, String)> = extract(text)
            .into_iter()
            .map(|i| (i.kind.as_str().to_owned(), i.text))
            .collect();
        for id in &labelled {
            let row = per_kind.entry(id.0.clone()).or_default();
            row.0 += 1;
            if found.contains(id) {
                row.1 += 1;
            } else {
                misses.push(id.clone());
            }
        }
        for id in &found {
            let row = per_kind.entry(id.0.clone()).or_default();
            row.2 += 1;
            if labelled.contains(id) {
                row.3 += 1;
            } else {
                extra.push(id.clone());
            }
        }
    }
    let total = per_kind.values().fold((0, 0, 0, 0), |a, r| {
        (a.0 + r.0, a.1 + r.1, a.2 + r.2, a.3 + r.3)
    });
    #[allow(clippy::cast_precision_loss)]
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let report = format!("per kind {per_kind:?}\nmissed {misses:?}\nextra {extra:?}");
    eprintln!(
        "recall {:.3}, precision {:.3}\n{report}",
        ratio(total.1, total.0),
        ratio(total.3, total.2)
    );
    assert!(
        ratio(total.1, total.0) >= 0.95,
        "recall {:.3}\n{report}",
        ratio(total.1, total.0)
    );
    assert!(
        ratio(total.3, total.2) >= 0.90,
        "precision {:.3}\n{report}",
        ratio(total.3, total.2)
    );
    for (kind, row) in &per_kind {
        assert!(row.0 >= 20, "{kind}: only {} labels in the fixture", row.0);
        assert!(ratio(row.1, row.0) >= 0.95, "{kind} recall\n{report}");
        assert!(ratio(row.3, row.2) >= 0.90, "{kind} precision\n{report}");
    }
}
