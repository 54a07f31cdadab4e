//! XPlane bytes → decode, then derive every table: any input may fail, none may panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use profq::model::Capture;

fuzz_target!(|data: &[u8]| {
    let mut capture = Capture::default();
    if profq::decode::xplane::decode_xspace(data, "fuzz", &mut capture).is_ok() {
        let _ = profq::tables::build(&mut capture, &Default::default());
    }
});
