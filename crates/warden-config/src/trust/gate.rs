//! The gate a project's settings file goes through before it is merged.
//!
//! Every key of the raw settings names a rule ([`keys`](super::keys)), and each rule is a type:
//! [`Lower`] exists only for numbers, [`Adds`] only for lists, [`Table`] only for tables, so a
//! rule that does not fit its key does not compile, and the table of a raw struct destructures
//! it, so a new key that names no rule does not compile either. The rule sees the file's value
//! and what the user's own layers resolve to, and keeps what it may.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::verdict::{IgnoredSetting, KeyInfo, KeyTrust, Tighten};
use crate::kinds::{NetworkMode, PermissionMode, RiskName};

/// Which pass the gate makes over a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// The project is not trusted: whatever could widen the user's grants is set aside.
    Untrusted,
    /// The project is trusted: only what no project may set is set aside.
    Trusted,
    /// No file: every key is listed with its rule.
    Describe,
}

/// One raw settings table, gated key by key. Implemented by [`gate_table!`].
pub(crate) trait Gate: Sized + Default {
    /// The resolved table the user's layers give, which the rules compare against.
    type Resolved;
    /// What of `self` (one file's table) stands.
    fn gate(self, base: &Self::Resolved, g: &mut Gatekeeper<'_>) -> Self;
}

/// The rule of one key: what of a file's value `T` stands, given `B`, the resolved value of
/// the user's own layers.
pub(crate) trait Rule<T, B> {
    const TRUST: KeyTrust;
    fn apply(value: T, base: &B, g: &mut Gatekeeper<'_>) -> Option<T>;
}

/// The gate's state while it walks one file.
pub(crate) struct Gatekeeper<'a> {
    pass: Pass,
    file: &'a Path,
    /// The file parsed for its spans, when a report first needs a line.
    doc: std::cell::OnceCell<Option<toml_edit::Document<&'a str>>>,
    /// Where each line of the file starts, for turning spans into lines.
    line_starts: std::cell::OnceCell<Vec<usize>>,
    text: &'a str,
    path: Vec<String>,
    what: &'static str,
    /// Values set aside, each with its file and line.
    pub(crate) ignored: Vec<IgnoredSetting>,
    /// Values applied only as tightening, which trusted would do more.
    pub(crate) limited: Vec<IgnoredSetting>,
    /// What the file would grant when trusted, by key: the digest a trust record is bound to.
    pub(crate) material: BTreeMap<String, Value>,
    /// Ask rules that only tighten (from an untrusted project).
    pub(crate) asks: Vec<String>,
    /// Risk levels that only raise (from an untrusted project).
    pub(crate) risk_floors: BTreeMap<String, RiskName>,
    /// Every key and its rule ([`Pass::Describe`]).
    pub(crate) keys: Vec<KeyInfo>,
}

impl<'a> Gatekeeper<'a> {
    /// A gate over `text`, the file at `file`.
    pub(crate) fn new(pass: Pass, file: &'a Path, text: &'a str) -> Self {
        Gatekeeper {
            pass,
            file,
            doc: std::cell::OnceCell::new(),
            line_starts: std::cell::OnceCell::new(),
            text,
            path: Vec::new(),
            what: "",
            ignored: Vec::new(),
            limited: Vec::new(),
            material: BTreeMap::new(),
            asks: Vec::new(),
            risk_floors: BTreeMap::new(),
            keys: Vec::new(),
        }
    }

    /// A gate that reads nothing and lists the keys.
    pub(crate) fn describing() -> Gatekeeper<'static> {
        Gatekeeper::new(Pass::Describe, Path::new(""), "")
    }

    /// The key `name` of the current table, under rule `R`.
    pub(crate) fn field<R: Rule<T, B>, T: Serialize + Default, B>(
        &mut self,
        name: &'static str,
        what: &'static str,
        value: Option<T>,
        base: &B,
    ) -> Option<T> {
        self.path.push(name.to_owned());
        let outer = std::mem::replace(&mut self.what, what);
        let out = match (self.pass, value) {
            (Pass::Describe, _) => {
                self.keys.push(KeyInfo {
                    key: self.path.join("."),
                    trust: R::TRUST,
                    what,
                });
                if R::TRUST == KeyTrust::Table {
                    let _ = R::apply(T::default(), base, self);
                }
                None
            }
            (_, None) => None,
            (_, Some(value)) => R::apply(value, base, self),
        };
        self.what = outer;
        self.path.pop();
        out
    }

    fn key(&self) -> String {
        self.path.join(".")
    }

    /// Notes `value` as part of what the file grants when trusted.
    fn grants(&mut self, value: &impl Serialize) {
        let value = set_only(value);
        self.material.insert(self.key(), value);
    }

    /// Sets `value` aside, one report per list entry or map key, with `why`.
    fn set_aside(&mut self, value: &impl Serialize, why: &str) {
        let reports = self.reports(value, why);
        self.ignored.extend(reports);
    }

    /// Notes `value` as applied only as tightening, with `why`: trusted, it would do more.
    fn limit(&mut self, value: &impl Serialize, why: &str) {
        let reports = self.reports(value, why);
        self.limited.extend(reports);
    }

    /// One report per list entry or map key of `value`, with `why`.
    fn reports(&self, value: &impl Serialize, why: &str) -> Vec<IgnoredSetting> {
        let mut out = Vec::new();
        let value = set_only(value);
        let key = self.key();
        let mut add = |gk: &Self, key: String, at: Vec<Locate>, shown: &Value| {
            out.push(IgnoredSetting {
                file: gk.file.to_path_buf(),
                line: gk.line(&at),
                key: warden_protocol::printable(&key),
                value: warden_protocol::printable(&shown_value(shown)),
                what: gk.what.to_owned(),
                why: why.to_owned(),
            });
        };
        let at: Vec<Locate> = self.path.iter().cloned().map(Locate::Key).collect();
        match &value {
            Value::Array(items) if !items.is_empty() => {
                for (index, item) in items.iter().enumerate() {
                    let mut place = at.clone();
                    place.push(Locate::Index(index));
                    add(self, key.clone(), place, item);
                }
            }
            Value::Object(map) if !map.is_empty() => {
                for (name, item) in map {
                    let mut place = at.clone();
                    place.push(Locate::Key(name.clone()));
                    add(self, format!("{key}.{name}"), place, item);
                }
            }
            _ => add(self, key, at, &value),
        }
        out
    }

    /// The 1-based line of a key or list entry in the file.
    fn line(&self, at: &[Locate]) -> Option<usize> {
        let doc = self
            .doc
            .get_or_init(|| toml_edit::Document::parse(self.text).ok())
            .as_ref()?;
        let mut span = None;
        let mut item: &toml_edit::Item = doc.as_item();
        for step in at {
            match step {
                Locate::Key(name) => {
                    let (key, next) = item.as_table_like()?.get_key_value(name)?;
                    span = key.span().or(span);
                    item = next;
                }
                Locate::Index(index) => {
                    let value = item.as_array()?.get(*index)?;
                    span = value.span().or(span);
                    break;
                }
            }
        }
        let starts = self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(at, _)| at + 1))
                .collect()
        });
        span.map(|range| starts.partition_point(|&start| start <= range.start))
    }

    fn untrusted(&self) -> bool {
        self.pass == Pass::Untrusted
    }
}

#[derive(Debug, Clone)]
enum Locate {
    Key(String),
    Index(usize),
}

/// `value` as JSON with the keys it leaves unset (`null`) left out.
fn set_only(value: &impl Serialize) -> Value {
    fn prune(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, prune(v)))
                    .collect(),
            ),
            other => other,
        }
    }
    prune(serde_json::to_value(value).unwrap_or(Value::Null))
}

/// A value as a report shows it: strings bare, a table as `key=value` pairs, a list joined.
fn shown_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", shown_value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => items.iter().map(shown_value).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Implements [`Gate`] for a raw settings table: every field named with its rule and, in plain
/// words, what it is. A field left out does not compile (the table is destructured), and a
/// field whose resolved table lacks it does not either.
macro_rules! gate_table {
    ($raw:ident => $resolved:ty { $($field:ident: $rule:ident = $what:literal),* $(,)? }) => {
        impl $crate::trust::gate::Gate for $raw {
            type Resolved = $resolved;
            fn gate(
                self,
                base: &$resolved,
                g: &mut $crate::trust::gate::Gatekeeper<'_>,
            ) -> Self {
                let $raw { $($field),* } = self;
                $raw {
                    $($field: g.field::<$crate::trust::gate::$rule, _, _>(
                        stringify!($field),
                        $what,
                        $field,
                        &base.$field,
                    ),)*
                }
            }
        }
    };
}

pub(crate) use gate_table;

/// Cosmetic, or narrowing by nature: the file's value stands.
pub(crate) struct MaySet;

impl<T, B> Rule<T, B> for MaySet {
    const TRUST: KeyTrust = KeyTrust::MaySet;
    fn apply(value: T, _: &B, _: &mut Gatekeeper<'_>) -> Option<T> {
        Some(value)
    }
}

/// A nested table: its own keys say.
pub(crate) struct Table;

impl<R: Gate> Rule<R, R::Resolved> for Table {
    const TRUST: KeyTrust = KeyTrust::Table;
    fn apply(value: R, base: &R::Resolved, g: &mut Gatekeeper<'_>) -> Option<R> {
        Some(value.gate(base, g))
    }
}

/// Ignored unless the project is trusted.
pub(crate) struct Ignored;

impl<T: Serialize, B> Rule<T, B> for Ignored {
    const TRUST: KeyTrust = KeyTrust::IgnoredWhenUntrusted;
    fn apply(value: T, _: &B, g: &mut Gatekeeper<'_>) -> Option<T> {
        g.grants(&value);
        if g.untrusted() {
            g.set_aside(&value, UNTRUSTED);
            return None;
        }
        Some(value)
    }
}

/// Never from a project's files, trusted or not.
pub(crate) struct UserOnly;

impl<T: Serialize, B> Rule<T, B> for UserOnly {
    const TRUST: KeyTrust = KeyTrust::UserOnly;
    fn apply(value: T, _: &B, g: &mut Gatekeeper<'_>) -> Option<T> {
        g.set_aside(
            &value,
            "only the user's settings and the managed file may set it",
        );
        None
    }
}

/// Only in the managed file.
pub(crate) struct ManagedOnly;

impl<T: Serialize, B> Rule<T, B> for ManagedOnly {
    const TRUST: KeyTrust = KeyTrust::ManagedOnly;
    fn apply(value: T, _: &B, g: &mut Gatekeeper<'_>) -> Option<T> {
        g.set_aside(&value, "only the managed file may set it");
        None
    }
}

const UNTRUSTED: &str = "the project is not trusted";

/// Entries only add restrictions: they stand.
pub(crate) struct Adds;

impl<T, B> Rule<Vec<T>, B> for Adds {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::Adds);
    fn apply(value: Vec<T>, _: &B, _: &mut Gatekeeper<'_>) -> Option<Vec<T>> {
        Some(value)
    }
}

/// A tightening rule's common shape: the value stands when trusted or when `looser` finds
/// nothing wrong with it; otherwise it is set aside with `looser`'s reason.
fn tighten<T: Serialize>(
    value: T,
    g: &mut Gatekeeper<'_>,
    looser: impl FnOnce(&T) -> Option<String>,
) -> Option<T> {
    g.grants(&value);
    if g.untrusted()
        && let Some(why) = looser(&value)
    {
        g.set_aside(
            &value,
            &format!("{UNTRUSTED}, and it would loosen yours ({why})"),
        );
        return None;
    }
    Some(value)
}

/// Only a value no higher than the user's own limit.
pub(crate) struct Lower;

macro_rules! lower_for {
    ($($ty:ty),*) => {$(
        impl Rule<$ty, $ty> for Lower {
            const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::Lower);
            fn apply(value: $ty, base: &$ty, g: &mut Gatekeeper<'_>) -> Option<$ty> {
                tighten(value, g, |v| (v > base).then(|| format!("{base}")))
            }
        }
        impl Rule<$ty, Option<$ty>> for Lower {
            const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::Lower);
            fn apply(value: $ty, base: &Option<$ty>, g: &mut Gatekeeper<'_>) -> Option<$ty> {
                tighten(value, g, |v| base.filter(|b| v > b).map(|b| format!("{b}")))
            }
        }
    )*};
}

lower_for!(u64, usize, f64);

/// Only `true` where the user's value is `true`.
pub(crate) struct OnlyTrue;

impl Rule<bool, bool> for OnlyTrue {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::OnlyTrue);
    fn apply(value: bool, base: &bool, g: &mut Gatekeeper<'_>) -> Option<bool> {
        tighten(value, g, |v| (!v && *base).then(|| "true".to_owned()))
    }
}

/// Only `false` where the user's value is `false`.
pub(crate) struct OnlyFalse;

impl Rule<bool, bool> for OnlyFalse {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::OnlyFalse);
    fn apply(value: bool, base: &bool, g: &mut Gatekeeper<'_>) -> Option<bool> {
        tighten(value, g, |v| (*v && !base).then(|| "false".to_owned()))
    }
}

/// A permission mode no looser than the user's.
pub(crate) struct StricterMode;

impl Rule<PermissionMode, PermissionMode> for StricterMode {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::StricterMode);
    fn apply(
        value: PermissionMode,
        base: &PermissionMode,
        g: &mut Gatekeeper<'_>,
    ) -> Option<PermissionMode> {
        let rank = |m: PermissionMode| PermissionMode::ALL.iter().position(|x| *x == m);
        tighten(value, g, |v| {
            (rank(*v) > rank(*base)).then(|| base.to_string())
        })
    }
}

/// A network mode no looser than the user's: `off`, then `allowlist`, then `on`.
pub(crate) struct StricterNetwork;

impl Rule<NetworkMode, NetworkMode> for StricterNetwork {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::StricterNetwork);
    fn apply(
        value: NetworkMode,
        base: &NetworkMode,
        g: &mut Gatekeeper<'_>,
    ) -> Option<NetworkMode> {
        // The modes are ordered from the strictest.
        tighten(value, g, |v| (*v > *base).then(|| base.to_string()))
    }
}

/// A list that replaces the user's, standing only when it holds nothing the user's lacks.
pub(crate) struct Subset;

impl Rule<Vec<String>, Vec<String>> for Subset {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::Subset);
    fn apply(
        value: Vec<String>,
        base: &Vec<String>,
        g: &mut Gatekeeper<'_>,
    ) -> Option<Vec<String>> {
        tighten(value, g, |v| {
            let extra: Vec<&str> = v
                .iter()
                .filter(|name| !base.contains(name))
                .map(String::as_str)
                .collect();
            (!extra.is_empty()).then(|| format!("yours does not pass {}", extra.join(", ")))
        })
    }
}

/// Ask rules: from an untrusted project they make what they match ask, and never loosen what
/// the rest of the policy decides (a denial stays one).
pub(crate) struct AsksOnly;

impl Rule<Vec<String>, Vec<String>> for AsksOnly {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::AsksOnly);
    fn apply(value: Vec<String>, _: &Vec<String>, g: &mut Gatekeeper<'_>) -> Option<Vec<String>> {
        g.grants(&value);
        if g.untrusted() {
            g.limit(
                &value,
                "the project is not trusted: it only makes what it matches ask; trusted, it \
                 could also make a refused action askable",
            );
            g.asks.extend(value);
            return None;
        }
        Some(value)
    }
}

/// Risk levels: from an untrusted project each is a floor, raising a program's level and
/// never lowering it.
pub(crate) struct RaisesOnly;

impl Rule<BTreeMap<String, RiskName>, BTreeMap<String, RiskName>> for RaisesOnly {
    const TRUST: KeyTrust = KeyTrust::MayOnlyTighten(Tighten::RaisesOnly);
    fn apply(
        value: BTreeMap<String, RiskName>,
        _: &BTreeMap<String, RiskName>,
        g: &mut Gatekeeper<'_>,
    ) -> Option<BTreeMap<String, RiskName>> {
        g.grants(&value);
        if g.untrusted() {
            g.limit(
                &value,
                "the project is not trusted: it only raises the program's level; trusted, it \
                 could also lower it",
            );
            for (program, level) in value {
                let floor = g.risk_floors.entry(program).or_insert(level);
                *floor = (*floor).max(level);
            }
            return None;
        }
        Some(value)
    }
}
