//! The run-wide string pool: every name of a capture is an id into it, each text kept once.

use super::NO_STR;

/// Run-wide string interner. Ids are dense and stable for the life of the capture.
///
/// The strings are kept once, end to end in one buffer, and found through a table of ids
/// hashed by their text: interning a new string allocates nothing of its own (a profile
/// has hundreds of thousands of distinct names: HLO instructions, shapes, scope paths).
#[derive(Clone, Default)]
pub struct StringPool {
    /// Every string's bytes, one after another in id order.
    pub(super) bytes: String,
    /// Where each string ends in `bytes` (it starts where the one before ends).
    pub(super) ends: Vec<usize>,
    /// Ids, hashed by their string's text.
    pub(super) table: hashbrown::HashTable<u32>,
}

pub(super) fn text_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(s)
}

/// String `k` of a pool's `bytes` and `ends` (borrowed apart from its table).
pub(super) fn pooled<'p>(bytes: &'p str, ends: &[usize], k: usize) -> &'p str {
    let start = if k == 0 { 0 } else { ends[k - 1] };
    &bytes[start..ends[k]]
}

impl StringPool {
    pub fn intern(&mut self, s: &str) -> u32 {
        let hash = text_hash(s);
        let (bytes, ends) = (&self.bytes, &self.ends);
        if let Some(&id) = self.table.find(hash, |&id| pooled(bytes, ends, id as usize) == s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.bytes.push_str(s);
        self.ends.push(self.bytes.len());
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table.insert_unique(hash, id, |&k| text_hash(pooled(bytes, ends, k as usize)));
        id
    }
    pub fn get(&self, id: u32) -> Option<&str> {
        if id == NO_STR || id as usize >= self.ends.len() {
            return None;
        }
        Some(pooled(&self.bytes, &self.ends, id as usize))
    }
    pub fn lookup(&self, s: &str) -> Option<u32> {
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table.find(text_hash(s), |&id| pooled(bytes, ends, id as usize) == s).copied()
    }
    /// Every string of this pool interned into `pool`, in id order: `ids[i]` is string `i`'s
    /// id there (how a pool built apart joins the run's).
    pub fn ids_in(&self, pool: &mut StringPool) -> Vec<u32> {
        (0..self.len()).map(|k| pool.intern(pooled(&self.bytes, &self.ends, k))).collect()
    }
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl std::fmt::Debug for StringPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries((0..self.ends.len()).map(|k| pooled(&self.bytes, &self.ends, k))).finish()
    }
}
