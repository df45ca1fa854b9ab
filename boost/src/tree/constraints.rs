//! XGBoost's interaction constraints (`interaction_constraints`, `FeatureInteractionConstraintHost`):
//! sets of features allowed to appear together on a path from the root. The root may split on any
//! feature; a node below may split on the features already on its path and on every feature of each
//! set that holds all of them. The driver ([`super::grow`]) filters each node's sampled features by
//! these rules, so every backend keeps them. (Monotone constraints are the split arithmetic's:
//! `boost_kernels::split::Bounds`.)

/// The constraint sets of a run, each sorted without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interactions {
    sets: Vec<Vec<u32>>,
}

impl Interactions {
    /// The sets as given (features in any order, repeats allowed).
    pub fn new(sets: &[Vec<u32>]) -> Self {
        let sets = sets
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.sort_unstable();
                s.dedup();
                s
            })
            .collect();
        Interactions { sets }
    }

    /// Whether there are constraints at all.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The features a node whose path holds the features `path` (sorted, without duplicates) may
    /// split on, increasing: XGBoost's `SplitImpl`.
    pub fn allowed(&self, path: &[u32]) -> Vec<u32> {
        let mut allowed = path.to_vec();
        for set in &self.sets {
            if path.iter().all(|f| set.binary_search(f).is_ok()) {
                allowed.extend_from_slice(set);
            }
        }
        allowed.sort_unstable();
        allowed.dedup();
        allowed
    }
}

/// `path` with `feature` added (both sorted, without duplicates).
pub fn extend_path(path: &[u32], feature: u32) -> Vec<u32> {
    let mut path = path.to_vec();
    if let Err(at) = path.binary_search(&feature) {
        path.insert(at, feature);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_allows_its_features_and_every_set_holding_them() {
        let c = Interactions::new(&[vec![2, 0], vec![0, 1, 3], vec![4]]);
        assert_eq!(c.allowed(&[0]), [0, 1, 2, 3]);
        assert_eq!(c.allowed(&[0, 1]), [0, 1, 3]);
        assert_eq!(c.allowed(&[0, 4]), [0, 4], "no set holds both: only the path");
        assert_eq!(c.allowed(&[5]), [5], "a feature of no set allows only itself");
        assert_eq!(extend_path(&[0, 3], 1), [0, 1, 3]);
        assert_eq!(extend_path(&[0, 3], 3), [0, 3]);
    }
}
