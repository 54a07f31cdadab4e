#!/usr/bin/env bash
# Re-vendors the chart libraries the HTML pages inline (developer-only; CI needs no npm):
# vega 6.4.0, vega-lite 6.5.0 and vega-embed 7.3.0 (all BSD-3-Clause) from the npm registry.
# Copies each package's build/*.min.js into src/render/html/assets/ as <name>-<version>.min.js,
# checks them against SHA256SUMS there, and writes LICENSES.md from the packages' own
# LICENSE files. To upgrade: change the versions here, run it with UPDATE=1 (rewrites
# SHA256SUMS), and check the pages in a browser (tests/browser.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
ASSETS=src/render/html/assets
PACKAGES=(vega@6.4.0 vega-lite@6.5.0 vega-embed@7.3.0)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
( cd "$WORK" && npm pack --silent "${PACKAGES[@]}" > /dev/null )
{
  echo "# Licences of the vendored chart libraries"
  echo
  echo "The pages profq writes inline these files. Each is the minified build of its npm package,"
  echo "which bundles the package's dependencies and theirs: the direct ones are listed below from"
  echo "the package's package.json; among the others are d3 modules and topojson-client (ISC),"
  echo "fast-json-patch and json-stringify-pretty-compact (MIT) and semver (ISC)."
} > "$WORK/LICENSES.md"
for spec in "${PACKAGES[@]}"; do
  name=${spec%@*}; version=${spec#*@}
  mkdir -p "$WORK/$name" && tar xzf "$WORK/$name-$version.tgz" -C "$WORK/$name"
  cp "$WORK/$name/package/build/$name.min.js" "$ASSETS/$name-$version.min.js"
  {
    echo
    echo "## $name $version ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["license"])' "$WORK/$name/package/package.json"))"
    echo
    echo "Bundled dependencies: $(python3 -c 'import json,sys; print(", ".join(sorted(json.load(open(sys.argv[1])).get("dependencies", {}))))' "$WORK/$name/package/package.json")."
    echo
    echo '```'
    cat "$WORK/$name/package/LICENSE"
    echo '```'
  } >> "$WORK/LICENSES.md"
done
cp "$WORK/LICENSES.md" "$ASSETS/LICENSES.md"
cd "$ASSETS"
if [ "${UPDATE:-0}" = 1 ]; then
  sha256sum ./*.min.js > SHA256SUMS
fi
sha256sum --check --quiet SHA256SUMS && echo "vendored: $(ls ./*.min.js | tr '\n' ' ')"
