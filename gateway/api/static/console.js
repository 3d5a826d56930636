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

// The Keys page (docs/console.md, "Keys"): create, rotate and revoke through the admin API
// (/admin/keys) with the page's CSRF token in X-CSRF-Token. A new key is shown once.
(function () {
  "use strict";
  var root = document.getElementById("keys");
  if (!root) { return; }
  var csrf = root.getAttribute("data-csrf") || "";
  var shown = document.getElementById("new-key");
  var failure = document.getElementById("key-error");

  function send(method, path, body) {
    var headers = { "content-type": "application/json" };
    if (csrf) { headers["x-csrf-token"] = csrf; }
    return window.fetch(path, {
      method: method, headers: headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (answer) {
      return answer.json().catch(function () { return {}; }).then(function (data) {
        if (!answer.ok) {
          var message = data && data.error && data.error.message;
          throw new Error(message || ("HTTP " + answer.status));
        }
        return data;
      });
    });
  }
  function fail(error) {
    failure.textContent = String(error.message || error);
    failure.hidden = false;
  }
  function show(view) {
    failure.hidden = true;
    document.getElementById("new-key-id").textContent = view.id;
    document.getElementById("new-key-value").textContent = view.key;
    document.getElementById("copy-state").textContent = "";
    shown.hidden = false;
    shown.scrollIntoView();
  }

  document.getElementById("copy-key").addEventListener("click", function () {
    var value = document.getElementById("new-key-value").textContent;
    var state = document.getElementById("copy-state");
    var copied = navigator.clipboard && navigator.clipboard.writeText
      ? navigator.clipboard.writeText(value) : Promise.reject(new Error("no clipboard"));
    copied.then(function () { state.textContent = "Copied."; }, function () {
      var range = document.createRange();
      range.selectNodeContents(document.getElementById("new-key-value"));
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      state.textContent = "Selected: copy it with your keyboard.";
    });
  });

  document.getElementById("create-key").addEventListener("submit", function (event) {
    event.preventDefault();
    var form = event.target;
    var body = {};
    var id = form.elements.namedItem("id").value.trim();
    if (id) { body.id = id; }
    if (form.elements.namedItem("team").value) { body.team = form.elements.namedItem("team").value; }
    var chosen = Array.prototype.map.call(form.elements.namedItem("configurations").selectedOptions,
      function (option) { return option.value; });
    if (chosen.length) { body.configurations = chosen; }
    send("POST", "/admin/keys", body).then(function (view) { form.reset(); show(view); }, fail);
  });

  Array.prototype.forEach.call(root.querySelectorAll("button[data-key-action]"), function (button) {
    button.addEventListener("click", function () {
      var id = button.getAttribute("data-key-id");
      var path = "/admin/keys/" + encodeURIComponent(id);
      if (button.getAttribute("data-key-action") === "rotate") {
        if (!window.confirm("Rotate the key '" + id + "'? The old key stops working now.")) { return; }
        send("POST", path + "/rotate", { graceSeconds: 0 }).then(show, fail);
      } else {
        if (!window.confirm("Revoke the key '" + id + "'? Calls with it get 401.")) { return; }
        send("DELETE", path).then(function () { window.location.reload(); }, fail);
      }
    });
  });
})();
