// The API page's "Copy" button for a new token (a file, not an inline script: the pages run
// under a Content-Security-Policy that allows same-origin scripts only).
(function () {
  var button = document.getElementById("copy-token");
  var field = document.getElementById("new-token");
  var status = document.getElementById("copy-status");
  if (!button || !field) { return; }
  function copied() { status.textContent = "Copied to the clipboard."; }
  function fallback() {
    field.focus();
    field.select();
    field.setSelectionRange(0, field.value.length);
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
    status.textContent = ok ? "Copied to the clipboard."
      : "Could not copy automatically. The token is selected: press Ctrl+C (⌘C on a Mac) or use your device's copy menu.";
  }
  button.addEventListener("click", function () {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(copied, fallback);
    } else {
      fallback();
    }
  });
})();
