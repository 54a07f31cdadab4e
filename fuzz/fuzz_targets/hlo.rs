//! Serialized HloProto bytes → the HLO index: errors fine, panics and huge allocations not.
#![no_main]
use libfuzzer_sys::fuzz_target;
use profq::model::{HloIndex, StringPool};

fuzz_target!(|data: &[u8]| {
    let mut pool = StringPool::default();
    let mut index = HloIndex::default();
    let _ = profq::decode::hlo::index_hlo_proto(data, Some(1), &mut pool, &mut index);
});
