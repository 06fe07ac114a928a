// Behaviour every page shares, kept out of the markup (no inline handlers):
// a form with data-confirm asks first, and a form posts once.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (form.getAttribute("data-sent")) { event.preventDefault(); return; }  // a double click
    if (question && !window.confirm(question)) { event.preventDefault(); return; }
    if (form.method.toLowerCase() === "post") { form.setAttribute("data-sent", "true"); }
  });
  // a page the browser brings back (Back button) may post again
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) { return; }
    Array.prototype.forEach.call(document.querySelectorAll("form[data-sent]"),
                                 function (form) { form.removeAttribute("data-sent"); });
  });
})();
