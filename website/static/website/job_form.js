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

/* A file instead of a link: sent to the uploads' door (POST /v1/api/uploads, the signed-in session
   with the form's CSRF token) when Queue is pressed, with a progress bar; then the form goes on
   with the upload's id in place of the URL. A file over the cap is refused before a byte is sent;
   the server's refusals (too big, not audio or video) are shown as it words them. */
(function () {
  "use strict";
  var form = document.getElementById("job-form");
  var input = document.getElementById("file");
  if (!form || !input) { return; }
  var zone = document.getElementById("dropzone");
  var progress = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var error = document.getElementById("upload-error");
  var uploadId = form.querySelector('[name="upload_id"]');
  function maxBytes() { return parseInt(form.getAttribute("data-max-bytes"), 10); }

  function fail(message) {
    error.textContent = message;
    error.hidden = false;
    progress.hidden = true;
    status.textContent = "";
    form.querySelector('button[type="submit"]').disabled = false;
  }

  function chosen() {
    uploadId.value = "";
    error.hidden = true;
    var file = input.files[0];
    if (!file) { status.textContent = ""; return; }
    if (file.size > maxBytes()) {
      fail("This file is too big: " + (file.size / 1048576).toFixed(1) + " MB, and the most is " +
        form.getAttribute("data-max-size") + ".");
      return;
    }
    status.textContent = file.name + " (" + (file.size / 1048576).toFixed(1) + " MB) will be sent when you press Queue.";
  }

  function answerMessage(xhr) {
    try {
      var body = JSON.parse(xhr.responseText);
      if (typeof body.detail === "string") { return body.detail; }
      return body.detail.map(function (entry) { return entry.msg; }).join(" ");
    } catch (ignored) {
      return "The upload failed (HTTP " + xhr.status + "). Try again.";
    }
  }

  input.addEventListener("change", chosen);
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("dragging"); });
  });
  zone.addEventListener("dragleave", function () { zone.classList.remove("dragging"); });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    zone.classList.remove("dragging");
    if (event.dataTransfer.files.length) { input.files = event.dataTransfer.files; chosen(); }
  });

  form.addEventListener("submit", function (event) {
    var file = input.files[0];
    if (!file || uploadId.value) { return; }  // a link, or the file already sent: the form goes on
    event.preventDefault();
    if (file.size > maxBytes()) { chosen(); return; }
    error.hidden = true;
    form.querySelector('button[type="submit"]').disabled = true;
    var data = new FormData();
    data.append("file", file, file.name);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.getAttribute("data-upload-url"));
    xhr.setRequestHeader("X-CSRFToken", form.querySelector('[name="csrfmiddlewaretoken"]').value);
    progress.value = 0;
    progress.hidden = false;
    xhr.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) { return; }
      progress.value = Math.round(100 * event.loaded / event.total);
      status.textContent = "Sending " + file.name + ": " + progress.value + "%";
    });
    xhr.addEventListener("load", function () {
      if (xhr.status === 201) {
        progress.value = 100;
        status.textContent = file.name + " sent and checked.";
        uploadId.value = JSON.parse(xhr.responseText).id;
        form.submit();
      } else {
        fail(answerMessage(xhr));
      }
    });
    xhr.addEventListener("error", function () { fail("The connection dropped while sending the file. Try again."); });
    xhr.send(data);
  });
})();
