//! Trace JSON bytes → streaming decode, then derive every table: errors fine, panics not.
#![no_main]
use libfuzzer_sys::fuzz_target;
use profq::model::Capture;

fuzz_target!(|data: &[u8]| {
    let mut capture = Capture::default();
    if profq::decode::trace_json::decode_trace_json(|| data, "fuzz", &mut capture).is_ok() {
        let _ = profq::tables::build(&mut capture, &Default::default());
    }
});
