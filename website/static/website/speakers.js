/* The job page's speaker names: the form is sent without leaving the page (as a job request of
   the account, like the API's POST /v1/api/transcription/{id}/speakers), and every paragraph of
   the transcript then shows the new name in place. Without script the form posts and comes back. */
(function () {
  "use strict";
  var form = document.querySelector("[data-speaker-names]");
  if (!form) { return; }
  var saved = form.querySelector("[data-speakers-saved]");
  var problem = form.querySelector("[data-speakers-error]");

  function show(names) {
    document.querySelectorAll(".transcript [data-speaker]").forEach(function (node) {
      var number = node.getAttribute("data-speaker");
      node.textContent = names[number] || "Speaker " + number;
    });
    form.querySelectorAll("input[name^='speaker-']").forEach(function (input) {
      input.value = names[input.name.slice("speaker-".length)] || "";
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    saved.hidden = true;
    problem.hidden = true;
    fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { Accept: "application/json" }
    })
      .then(function (response) {
        return response.json().then(function (body) { return { status: response.status, body: body }; });
      })
      .then(function (answer) {
        if (answer.status === 200) {
          show(answer.body.names);
          saved.hidden = false;
          return;
        }
        var detail = answer.body.detail;
        problem.textContent = Array.isArray(detail)
          ? detail.map(function (entry) { return "Speaker " + entry.loc[entry.loc.length - 1] + ": " + entry.msg; }).join(" ")
          : String(detail);
        problem.hidden = false;
      })
      .catch(function () {
        problem.textContent = "The names could not be saved; try again.";
        problem.hidden = false;
      });
  });
}());
