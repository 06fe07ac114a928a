// The environment page while a deployment runs: every second the status, the
// applications, the reports, the picture and a failure come from .../live; when
// the deployment ends the page reloads (and when a deletion ends, the list of
// environments comes instead).
(function () {
  "use strict";
  var page = document.getElementById("environment");
  if (!page || page.getAttribute("data-busy") !== "true") { return; }
  var envId = page.getAttribute("data-env");

  function show(id, word) {
    var element = document.getElementById(id);
    if (!element || !word) { return; }
    element.textContent = word.words;
    element.setAttribute("data-code", word.code);
    element.className = (id === "env-status" ? "status " : "") + "tone-" + word.tone;
  }

  function showFailure(failure) {
    var box = document.getElementById("failure");
    if (!failure) { return; }
    box.innerHTML = failure;
    box.hidden = false;
  }

  function poll() {
    fetch("/ui/environments/" + envId + "/live", {credentials: "same-origin"})
      .then(function (response) { return response.json(); })
      .then(function (live) {
        if (live.gone) { location.assign("/ui/environments"); return; }
        show("env-status", live.status);
        if (live.deployment) { show("deployment-state", live.deployment.state); }
        document.getElementById("applications-box").innerHTML = live.applications;
        document.getElementById("reports").innerHTML = live.reports;
        document.getElementById("picture").innerHTML = live.picture;
        showFailure(live.failure);
        if (live.status.code === "deploying" || live.status.code === "deleting") {
          setTimeout(poll, 1000);
        } else {
          location.reload();
        }
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 500);
})();
