// The package page: "Add application" goes to the wizard of the chosen environment;
// a form of class "confirm" asks its data-question first.
(function () {
  var add = document.getElementById("add-form");
  if (add) {
    add.addEventListener("submit", function () {
      add.action = "/ui/environments/" + add.env.value + "/add/" + add.dataset.package;
    });
  }
  document.querySelectorAll("form.confirm").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!confirm(form.dataset.question)) { event.preventDefault(); }
    });
  });
})();
