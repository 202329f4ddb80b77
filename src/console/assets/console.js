// engaged console: small conveniences on pages that work without this script.
// "/" focuses the search field; a form asking for confirmation (data-confirm) asks
// before it is sent.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable);
    if (typing || event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.key === "/") {
      var search = document.querySelector("input[name=q]");
      if (search) { event.preventDefault(); search.focus(); }
    } else if (event.key === "r") {
      var reply = document.querySelector("textarea[name=message]");
      if (reply) { event.preventDefault(); reply.focus(); }
    }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
})();
