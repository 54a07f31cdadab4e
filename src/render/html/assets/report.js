// profq report: renders every chart of the page with vega-embed, then says on <html> how it
// went: data-profq-status="ok" and data-profq-charts="N" once all N charts rendered, or
// data-profq-status="error" with data-profq-error="message" on any failure. It never logs.
(function () {
  "use strict";
  var root = document.documentElement;
  function fail(message) {
    root.setAttribute("data-profq-status", "error");
    root.setAttribute("data-profq-error", String(message));
  }
  window.addEventListener("error", function (e) { fail(e.message || "error"); });
  window.addEventListener("unhandledrejection", function (e) {
    fail((e.reason && e.reason.message) || e.reason || "rejected promise");
  });

  // Sortable tables: a click on a header sorts by that column (numbers by data-sort).
  function sortable(table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute("data-order") !== "desc";
        heads.forEach(function (h) { h.removeAttribute("data-order"); });
        th.setAttribute("data-order", down ? "desc" : "asc");
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var nx = x.getAttribute("data-sort"), ny = y.getAttribute("data-sort");
          var c = nx !== null && ny !== null ? Number(nx) - Number(ny) : x.textContent.localeCompare(y.textContent);
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(sortable);

  var charts = Array.prototype.slice.call(document.querySelectorAll("[data-profq-chart]"));
  var jobs = charts.map(function (el) {
    var spec = JSON.parse(document.getElementById(el.getAttribute("data-profq-chart")).textContent);
    var opts = { renderer: el.getAttribute("data-renderer") || "svg", actions: false, ast: true, mode: "vega-lite" };
    return vegaEmbed(el, spec, opts).then(function (result) {
      el.setAttribute("data-profq-rendered", "true");
      return result;
    });
  });
  Promise.all(jobs).then(function () {
    if (root.getAttribute("data-profq-status") !== "error") {
      root.setAttribute("data-profq-status", "ok");
    }
    root.setAttribute("data-profq-charts", String(jobs.length));
  }, function (e) { fail((e && e.message) || e); });
})();
