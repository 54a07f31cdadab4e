//! The vendored chart libraries (src/render/html/assets) are the pinned builds: each file's
//! SHA-256 equals the one in SHA256SUMS, which tools/vendor-vega.sh checks against npm's.

use sha2::{Digest, Sha256};

#[test]
fn vendored_chart_libraries_match_their_pinned_sums() {
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/render/html/assets");
    let sums = std::fs::read_to_string(assets.join("SHA256SUMS")).unwrap();
    let mut checked = 0;
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let (want, name) = line.split_once("  ").expect("sha256sum format");
        let bytes = std::fs::read(assets.join(name.trim_start_matches("./"))).unwrap();
        let got: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want, "{name} differs from its pinned build");
        checked += 1;
    }
    assert_eq!(checked, 3, "vega, vega-lite and vega-embed");
    let licences = std::fs::read_to_string(assets.join("LICENSES.md")).unwrap();
    for name in ["vega 6.4.0", "vega-lite 6.5.0", "vega-embed 7.3.0"] {
        assert!(licences.contains(&format!("## {name} (BSD-3-Clause)")), "{name}'s licence is kept");
    }
}
