/* The job form: shows the options that apply to what is being made, and what it will cost per
   minute of video, from the multipliers the page was given (billing.pricing on the server). */
(function () {
  "use strict";
  var form = document.getElementById("job-form");
  if (!form) { return; }
  var prices = JSON.parse(form.getAttribute("data-multipliers"));
  var estimate = document.getElementById("estimate");

  function value(name) {
    var checked = form.querySelector('[name="' + name + '"]:checked');
    if (checked) { return checked.value; }
    var field = form.querySelector('[name="' + name + '"]');
    return field ? field.value : "";
  }

  function translations() {
    var seen = {};
    return form.querySelector('[name="target_languages"]').value.split(",").filter(function (item) {
      var key = item.trim().toLowerCase();
      if (!key || seen[key]) { return false; }
      seen[key] = true;
      return true;
    }).length;
  }

  function refresh() {
    var type = value("type");
    form.querySelectorAll("[data-for]").forEach(function (section) {
      section.hidden = section.getAttribute("data-for").split(" ").indexOf(type) < 0;
    });
    var count = type === "transcript" ? 0 : translations();
    var cost;
    if (type === "burned") {
      cost = prices.burned[value("quality")] + count * prices.burned_translation[value("quality")];
    } else if (type === "subtitles") {
      cost = prices.subtitles + count * prices.subtitles_translation;
    } else {
      cost = prices.transcript;
    }
    var each = form.querySelector('[name="playlist"]').checked ? " for each video" : "";
    estimate.textContent = "Costs " + cost + " minute" + (cost === 1 ? "" : "s") +
      " of your balance per minute of video" + each + ".";
    estimate.hidden = false;
  }

  form.addEventListener("change", refresh);
  form.addEventListener("input", refresh);
  refresh();
})();
