/* Follows the jobs on a page while they run: every 2.5 s one request to the status endpoint
   (counted as one poll of the account's rate limit) updates their state, progress, duration
   and minutes. A job page reloads once its job has ended, to show the results. */
(function () {
  "use strict";
  var INTERVAL = 2500;
  var FINAL = { done: true, failed: true };

  function follow(root) {
    var url = root.getAttribute("data-poll");
    var reloadWhenFinal = root.hasAttribute("data-reload-when-final");
    var pending = [];
    root.querySelectorAll("[data-job-state]").forEach(function (node) {
      var state = node.querySelector("[data-state]");
      if (state && !FINAL[state.textContent.trim()]) {
        pending.push(node.getAttribute("data-job-state"));
      }
    });

    function update(job) {
      root.querySelectorAll('[data-job-state="' + job.id + '"]').forEach(function (node) {
        var state = node.querySelector("[data-state]");
        if (state.textContent !== job.state) {
          state.textContent = job.state;
          state.className = "state " + job.state;
        }
        node.querySelector("[data-progress]").value = job.progress;
        node.querySelector("[data-progress-text]").textContent = job.progress + "%";
        node.querySelector("[data-progress-wrap]").hidden = job.final;
      });
      var row = root.matches("[data-job-id]") ? root : root.querySelector('[data-job-id="' + job.id + '"]');
      if (row) {
        var duration = row.querySelector("[data-duration]");
        if (duration && job.duration) { duration.textContent = job.duration; }
        var charged = row.querySelector("[data-charged]");
        if (charged && job.charged) { charged.textContent = job.charged; }
      }
    }

    function tick() {
      if (!pending.length) { return; }
      var query = pending.map(function (id) { return "id=" + encodeURIComponent(id); }).join("&");
      fetch(url + "?" + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (response.status === 429) {
            var wait = parseInt(response.headers.get("Retry-After") || "5", 10);
            window.setTimeout(tick, Math.max(wait, 1) * 1000);
            return null;
          }
          if (!response.ok) { throw new Error("status " + response.status); }
          return response.json();
        })
        .then(function (body) {
          if (!body) { return; }
          var ended = false;
          body.jobs.forEach(function (job) {
            update(job);
            if (job.final) {
              ended = true;
              pending = pending.filter(function (id) { return id !== job.id; });
            }
          });
          if (ended && reloadWhenFinal) {
            window.location.reload();
            return;
          }
          window.setTimeout(tick, INTERVAL);
        })
        .catch(function () { window.setTimeout(tick, INTERVAL * 4); });
    }

    window.setTimeout(tick, INTERVAL);
  }

  document.querySelectorAll("[data-poll]").forEach(follow);
})();
