//! The heap bytes a structure keeps, for the bench commands' memory report: the
//! `mapping_bytes` of regions, FTLs and page stores (their maps, page and block tables,
//! as opposed to the device's page data). Vectors count their capacity and hash maps
//! their buckets (what the allocator holds); ordered maps count their entries only, a
//! lower bound (their node headers are not counted). Nested heap data is added by the
//! caller through the `_with` forms.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};

/// A vector's buffer.
pub(crate) fn vec<T>(v: &Vec<T>) -> u64 {
    (v.capacity() * size_of::<T>()) as u64
}

/// A vector's buffer and what each element keeps.
pub(crate) fn vec_with<T>(v: &Vec<T>, each: impl Fn(&T) -> u64) -> u64 {
    vec(v) + v.iter().map(each).sum::<u64>()
}

pub(crate) fn boxed<T>(b: &[T]) -> u64 {
    size_of_val(b) as u64
}

pub(crate) fn deque<T>(v: &VecDeque<T>) -> u64 {
    (v.capacity() * size_of::<T>()) as u64
}

pub(crate) fn heap<T: Ord>(h: &BinaryHeap<T>) -> u64 {
    (h.capacity() * size_of::<T>()) as u64
}

/// A hash map's buckets: an entry and a control byte each.
pub(crate) fn map<K, V, S>(m: &HashMap<K, V, S>) -> u64 {
    (m.capacity() * (size_of::<(K, V)>() + 1)) as u64
}

/// A hash map's buckets and what each value keeps.
pub(crate) fn map_with<K, V, S>(m: &HashMap<K, V, S>, each: impl Fn(&V) -> u64) -> u64 {
    map(m) + m.values().map(each).sum::<u64>()
}

pub(crate) fn btree_map<K, V>(m: &BTreeMap<K, V>) -> u64 {
    (m.len() * size_of::<(K, V)>()) as u64
}

pub(crate) fn btree_map_with<K, V>(m: &BTreeMap<K, V>, each: impl Fn(&V) -> u64) -> u64 {
    btree_map(m) + m.values().map(each).sum::<u64>()
}

pub(crate) fn btree_set<T>(s: &BTreeSet<T>) -> u64 {
    (s.len() * size_of::<T>()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_capacity_and_what_elements_keep() {
        let v: Vec<u32> = Vec::with_capacity(10);
        assert_eq!(vec(&v), 40);
        let nested = vec![vec![0u8; 3], Vec::with_capacity(5)];
        assert_eq!(vec_with(&nested, vec), 2 * size_of::<Vec<u8>>() as u64 + 8);
        let mut m: HashMap<u32, u64> = HashMap::new();
        m.insert(1, 2);
        assert_eq!(map(&m), (m.capacity() * 17) as u64);
        let t: BTreeMap<u32, u32> = (0..4).map(|i| (i, i)).collect();
        assert_eq!(btree_map(&t), 32);
    }
}
