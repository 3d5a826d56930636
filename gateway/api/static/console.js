// The governance console's one script (docs/console.md, "Auto-refresh"): reload the page
// every data-refresh seconds while it is visible, unless paused. The choice is kept in
// localStorage. Without this script every page still works; it only does not refresh.
(function () {
  "use strict";
  var button = document.getElementById("refresh");
  var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (!button || !(seconds > 0)) { return; }
  var storageKey = "gateway-console-refresh";
  var paused = false;
  try { paused = window.localStorage.getItem(storageKey) === "paused"; } catch (e) { paused = false; }
  function show() {
    button.textContent = paused ? "Resume auto-refresh" : "Pause auto-refresh (" + seconds + " s)";
    button.setAttribute("aria-pressed", paused ? "true" : "false");
  }
  button.hidden = false;
  show();
  button.addEventListener("click", function () {
    paused = !paused;
    try { window.localStorage.setItem(storageKey, paused ? "paused" : "on"); } catch (e) { /* private mode */ }
    show();
  });
  window.setInterval(function () {
    var active = document.activeElement;
    var typing = active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
    if (!paused && !typing && document.visibilityState === "visible") { window.location.reload(); }
  }, seconds * 1000);
})();
