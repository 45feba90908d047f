//! Merging one settings layer into a higher one.
//!
//! Scalars: the higher layer wins. Lists: concatenated, higher first, duplicates dropped. Maps:
//! merged by key, with the values merged in turn. Tables: merged field by field, through
//! [`merge_struct!`], which destructures the lower value so a new field is a compile error until
//! it is listed.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::kinds::{
    Backend, LimitsFallback, NetworkMode, PermissionMode, Profile, ProviderKind, RiskName,
    RootIdentity,
};

/// Fold a lower-priority value into `self`, which has the higher priority.
pub(crate) trait Merge {
    fn merge(&mut self, lower: Self);
}

impl<T: Merge> Merge for Option<T> {
    fn merge(&mut self, lower: Self) {
        match (self.as_mut(), lower) {
            (Some(higher), Some(lower)) => higher.merge(lower),
            (None, lower @ Some(_)) => *self = lower,
            (_, None) => {}
        }
    }
}

impl<T: PartialEq> Merge for Vec<T> {
    fn merge(&mut self, lower: Self) {
        for item in lower {
            if !self.contains(&item) {
                self.push(item);
            }
        }
    }
}

impl<K: Ord, V: Merge> Merge for BTreeMap<K, V> {
    fn merge(&mut self, lower: Self) {
        for (key, value) in lower {
            match self.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(mut slot) => slot.get_mut().merge(value),
            }
        }
    }
}

/// Scalars: the higher layer's value stands.
macro_rules! merge_keep_higher {
    ($($ty:ty),* $(,)?) => {
        $(impl Merge for $ty {
            fn merge(&mut self, _lower: Self) {}
        })*
    };
}

merge_keep_higher!(
    bool,
    u32,
    u64,
    usize,
    f64,
    String,
    PermissionMode,
    ProviderKind,
    RiskName,
    NetworkMode,
    Backend,
    Profile,
    RootIdentity,
    LimitsFallback
);

/// Implement [`Merge`] for a settings table by merging every field.
macro_rules! merge_struct {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::merge::Merge for $ty {
            fn merge(&mut self, lower: Self) {
                let $ty { $($field),* } = lower;
                $($crate::merge::Merge::merge(&mut self.$field, $field);)*
            }
        }
    };
}

pub(crate) use merge_struct;

/// Remove later duplicates, keeping first occurrences in order.
pub(crate) fn dedup<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    out.merge(items);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Table {
        name: Option<String>,
        list: Option<Vec<u32>>,
        map: Option<BTreeMap<String, Table>>,
    }

    merge_struct!(Table { name, list, map });

    #[test]
    fn higher_scalar_wins_and_missing_scalar_is_filled() {
        let mut higher = Some("high".to_owned());
        higher.merge(Some("low".to_owned()));
        assert_eq!(higher.as_deref(), Some("high"));

        let mut unset: Option<String> = None;
        unset.merge(Some("low".to_owned()));
        assert_eq!(unset.as_deref(), Some("low"));
    }

    #[test]
    fn lists_concatenate_higher_first_without_duplicates() {
        let mut higher = vec![1, 2];
        higher.merge(vec![2, 3, 1, 4]);
        assert_eq!(higher, [1, 2, 3, 4]);
        assert_eq!(dedup(vec![3, 3, 1, 3]), [3, 1]);
    }

    #[test]
    fn nested_tables_and_maps_merge_recursively() {
        let leaf = |name: &str| Table {
            name: Some(name.to_owned()),
            ..Table::default()
        };
        let mut higher = Table {
            list: Some(vec![1]),
            map: Some(BTreeMap::from([("a".to_owned(), leaf("high-a"))])),
            ..Table::default()
        };
        let lower = Table {
            name: Some("low".to_owned()),
            list: Some(vec![2]),
            map: Some(BTreeMap::from([
                ("a".to_owned(), leaf("low-a")),
                ("b".to_owned(), leaf("low-b")),
            ])),
        };
        higher.merge(lower);
        assert_eq!(higher.name.as_deref(), Some("low"));
        assert_eq!(higher.list, Some(vec![1, 2]));
        let map = higher.map.unwrap_or_default();
        assert_eq!(map["a"].name.as_deref(), Some("high-a"));
        assert_eq!(map["b"].name.as_deref(), Some("low-b"));
    }
}
