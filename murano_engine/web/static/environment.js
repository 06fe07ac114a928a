// The environment page: while a deployment runs, its status, reports and picture are
// asked for every second (the script's data-live URL) and put in place.
(function () {
  var script = document.currentScript;
  var busy = script.dataset.busy === "true";
  var live_url = script.dataset.live;
  function poll() {
    fetch(live_url, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (live) {
        document.getElementById("env-status").textContent = live.status;
        document.getElementById("env-status").className = "status status-" + live.status;
        var state = document.getElementById("deployment-state");
        if (state && live.deployment) { state.textContent = live.deployment.state;
          state.className = "state-" + live.deployment.state; }
        document.getElementById("reports").innerHTML = live.reports;
        document.getElementById("picture").innerHTML = live.picture;
        var failure = document.getElementById("failure");
        if (live.failure) { failure.hidden = false;
          failure.innerHTML = "<h2></h2><pre class='stack'></pre>";
          failure.querySelector("h2").textContent = "Failed: " + live.failure.message;
          failure.querySelector("pre").textContent = live.failure.traceback || live.failure.details || ""; }
        if (live.status === "deploying" || live.status === "deleting") { setTimeout(poll, 1000); }
        else if (busy) { location.reload(); }
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  if (busy) { setTimeout(poll, 500); }
})();
