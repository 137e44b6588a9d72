/* The job page's transcript editor (issue 46). The transcript is read from /jobs/<id>/segments
   (the API's segments document: segments, ETag) and shown as cues beside the job's player: the
   cue under the playhead is highlighted, a cue's time seeks, its words are edited in place and its
   speaker is chosen or typed. Changes wait in `pending` until Save, which sends them as the API's
   PATCH with If-Match; Undo takes back the last change not yet saved; a 412 (someone saved first)
   is shown, the unsaved changes kept on screen.

   Each change names its cue by its position in the transcript as it stood when the change was
   made. The API names a segment by the index of the document its PATCH was made on, and a split
   renumbers what follows, so Save sends the changes in rounds that each end with a split: within a
   round positions are that round's indices, and each round is sent with the ETag the last answered.
   The rules the cues are marked by are the subtitle renderer's (#editor-limits).

   A job with translations is charged for translating the changed cues again (issue 56): while
   changes wait, the first round is sent as a dry run (`dry_run: true`: checked and quoted, nothing
   saved) and the quote shown; after a save, what it charged.

   Words the speech model was unsure of (probability under limits.doubtBelow, calibrated in
   bench/asr/confidence.py) are listed under their cue as buttons; Alt+N (or "Next doubtful word")
   selects the next one in its cue's text and plays from just before it, so a person listens only
   there. A word a person typed is certain, as on the server (transcript_edits.with_text). */
(function () {
  "use strict";
  var root = document.getElementById("editor");
  if (!root) { return; }
  var player = document.getElementById("editor-player");
  var limits = JSON.parse(document.getElementById("editor-limits").textContent);
  var names = JSON.parse(document.getElementById("editor-names").textContent);
  var list = root.querySelector("[data-editor-cues]");
  var saveButton = root.querySelector("[data-editor-save]");
  var undoButton = root.querySelector("[data-editor-undo]");
  var status = root.querySelector("[data-editor-status]");
  var conflict = root.querySelector("[data-editor-conflict]");
  var problem = root.querySelector("[data-editor-error]");
  var choices = document.getElementById("editor-speakers");
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var quoteLine = root.querySelector("[data-editor-quote]");  // only for a job with translations

  var saved = null;     // the document as the server last answered it
  var pending = [];     // changes not saved yet, in order: {op, at, text | speaker | word}
  var newNames = {};    // speaker number -> the name typed for a new speaker
  var current = [];     // the saved segments with the pending changes applied: what is shown
  var busy = false;
  var quoteTimer = null;
  var quoteAsked = 0;   // a quote answered after a later one was asked is dropped
  var lastCharge = "";  // what the last save charged, said after it

  function copy(segment) {
    var words = segment.words.map(function (w) {
      return { start: w.start, end: w.end, word: w.word, probability: w.probability };
    });
    return { start: segment.start, end: segment.end, speaker: segment.speaker, text: segment.text, words: words };
  }

  function piece(words, speaker) {
    return {
      start: words[0].start, end: words[words.length - 1].end, speaker: speaker, words: words,
      text: words.map(function (w) { return w.word; }).join(" ")
    };
  }

  // The server's with_text: the same number of words keep their times, else the segment's time
  // is shared among the new words by their length.
  function withText(segment, text) {
    var tokens = text.split(/\s+/).filter(Boolean);
    var words;
    if (tokens.length === segment.words.length) {
      words = segment.words.map(function (w, i) {
        return { start: w.start, end: w.end, word: tokens[i], probability: w.word === tokens[i] ? w.probability : 1 };
      });
    } else {
      var total = tokens.reduce(function (sum, t) { return sum + t.length + 1; }, 0);
      var at = segment.start;
      words = tokens.map(function (t) {
        var span = (segment.end - segment.start) * (t.length + 1) / total;
        var word = { start: at, end: at + span, word: t, probability: 1 };
        at += span;
        return word;
      });
    }
    return { start: segment.start, end: segment.end, speaker: segment.speaker, text: text, words: words };
  }

  function apply(doc, change) {
    var segment = doc[change.at];
    if (change.op === "text") {
      doc[change.at] = withText(segment, change.text);
    } else if (change.op === "speaker") {
      segment.speaker = change.speaker;
    } else if (change.op === "split") {
      doc.splice(change.at, 1, piece(segment.words.slice(0, change.word), segment.speaker),
        piece(segment.words.slice(change.word), segment.speaker));
    }
  }

  function replay() {
    current = saved.segments.map(copy);
    pending.forEach(function (change) { apply(current, change); });
  }

  function clock(seconds) {
    var m = Math.floor(seconds / 60);
    var s = (seconds - m * 60).toFixed(1);
    return (m < 10 ? "0" : "") + m + ":" + (s.length < 4 ? "0" : "") + s;
  }

  function label(number) {
    return newNames[number] || names[String(number)] || "Speaker " + number;
  }

  function speakersHeld() {
    var held = {};
    current.forEach(function (segment) { held[segment.speaker] = true; });
    return Object.keys(held).map(Number).sort(function (a, b) { return a - b; });
  }

  // What the subtitle rules say of a cue: each broken rule as a sentence.
  function breaks(segment) {
    var seconds = segment.end - segment.start;
    var found = [];
    var cps = segment.text.length / Math.max(seconds, 0.001);
    if (cps > limits.maxCps) {
      found.push(Math.round(cps) + " characters a second (at most " + limits.maxCps + ")");
    }
    if (seconds < limits.minDuration) {
      found.push(seconds.toFixed(2) + " s on screen (at least " + limits.minDuration + " s)");
    }
    if (segment.text.length > limits.maxLines * limits.maxLineChars) {
      found.push(segment.text.length + " characters: more than " + limits.maxLines + " lines of " +
        limits.maxLineChars + " (split it where it should break)");
    }
    return found;
  }

  // The cue's words the model was unsure of, each with where it stands in the cue's text.
  function doubts(segment) {
    var found = [];
    var from = 0;
    segment.words.forEach(function (w) {
      var begins = segment.text.indexOf(w.word, from);
      if (begins < 0) { return; }
      from = begins + w.word.length;
      if (typeof w.probability === "number" && w.probability < limits.doubtBelow) {
        found.push({ word: w, begins: begins, ends: from });
      }
    });
    return found;
  }

  function showDoubts(row, segment, at) {
    var box = row.querySelector(".cue-doubts");
    box.textContent = "";
    var found = doubts(segment);
    box.hidden = found.length === 0;
    row.classList.toggle("has-doubts", found.length > 0);
    if (!found.length) { return; }
    box.appendChild(document.createTextNode("Check: "));
    found.forEach(function (doubt, k) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "doubt link";
      button.textContent = doubt.word.word;
      button.title = "The speech model was " + Math.round(doubt.word.probability * 100) + "% sure";
      button.setAttribute("aria-label", "Check “" + doubt.word.word + "” in cue " + (at + 1));
      button.addEventListener("click", function () { showDoubt(position(row), k); });
      box.appendChild(button);
    });
  }

  var lastDoubt = null;  // {at, ends} of the word last shown: where the button goes on from

  // Select the k-th doubtful word of cue `at` in its text and play from just before it.
  function showDoubt(at, k) {
    var doubt = doubts(current[at])[k];
    lastDoubt = { at: at, ends: doubt.ends };
    var area = list.children[at].querySelector(".cue-text");
    area.focus();
    area.setSelectionRange(doubt.begins, doubt.ends);
    if (player) {
      player.currentTime = Math.max(doubt.word.start - 0.5, 0);
      highlight();
    }
  }

  // The doubtful word after the one selected (or after the caret, or the playhead's cue), wrapping.
  function nextDoubt() {
    var area = document.activeElement;
    var inCue = area && area.classList && area.classList.contains("cue-text");
    var at = inCue ? position(area.closest(".cue")) : (lastDoubt ? lastDoubt.at : Math.max(playing(), 0));
    var after = inCue ? area.selectionEnd : (lastDoubt ? lastDoubt.ends : -1);
    if (at >= current.length) { at = 0; after = -1; }
    for (var step = 0; step <= current.length; step += 1) {
      var cue = (at + step) % current.length;
      var found = doubts(current[cue]);
      for (var k = 0; k < found.length; k += 1) {
        if (step > 0 || found[k].ends > after) { showDoubt(cue, k); return; }
      }
      after = -1;
    }
    status.textContent = "No doubtful words left.";
  }

  function fill(row, segment, at) {
    row.querySelector(".cue-time").textContent = clock(segment.start) + " – " + clock(segment.end);
    row.querySelector(".cue-speaker").value = label(segment.speaker);
    var text = row.querySelector(".cue-text");
    if (text.value !== segment.text) { text.value = segment.text; }
    var found = breaks(segment);
    row.classList.toggle("breaks-rules", found.length > 0);
    var flags = row.querySelector(".cue-flags");
    flags.textContent = found.join("; ");
    flags.hidden = found.length === 0;
    showDoubts(row, segment, at);
    row.querySelector(".cue-speaker").setAttribute("aria-label", "Speaker of cue " + (at + 1));
    text.setAttribute("aria-label", "Text of cue " + (at + 1));
  }

  function row(segment, at) {
    var item = document.createElement("li");
    item.className = "cue";
    item.innerHTML = '<button type="button" class="cue-time link"></button>' +
      '<input class="cue-speaker" list="editor-speakers" autocomplete="off" maxlength="40">' +
      '<textarea class="cue-text" rows="2" maxlength="500" spellcheck="true"></textarea>' +
      '<p class="cue-flags small" hidden></p>' +
      '<p class="cue-doubts small" hidden></p>';
    item.querySelector(".cue-time").addEventListener("click", function () { seek(position(item)); });
    item.querySelector(".cue-text").addEventListener("change", function (event) {
      changeText(position(item), event.target);
    });
    item.querySelector(".cue-speaker").addEventListener("change", function (event) {
      changeSpeaker(position(item), event.target);
    });
    fill(item, segment, at);
    return item;
  }

  function position(item) { return Array.prototype.indexOf.call(list.children, item); }

  function render() {
    list.textContent = "";
    current.forEach(function (segment, at) { list.appendChild(row(segment, at)); });
    refresh();
  }

  function refresh() {
    choices.textContent = "";
    speakersHeld().forEach(function (number) {
      var option = document.createElement("option");
      option.value = label(number);
      choices.appendChild(option);
    });
    saveButton.disabled = busy || pending.length === 0;
    undoButton.disabled = busy || pending.length === 0;
    if (!busy) {
      status.textContent = pending.length
        ? pending.length + " change" + (pending.length === 1 ? "" : "s") + " not saved."
        : "Saved (version " + saved.version + ")." + lastCharge;
      askQuote();
    }
    highlight();
  }

  function charged(charge, verb) {
    if (charge.error) { return " " + charge.error; }
    if (!charge.languages.length) { return ""; }
    var cues = charge.cues + " changed cue" + (charge.cues === 1 ? "" : "s");
    return " " + verb + " " + charge.minutes + " for translating " + cues + " again into " +
      charge.languages.join(", ") + ".";
  }

  // The quote of the changes waiting: asked a moment after the last one, so typing sends few.
  function askQuote() {
    if (!quoteLine) { return; }
    clearTimeout(quoteTimer);
    quoteAsked += 1;
    if (!pending.length) { quoteLine.hidden = true; return; }
    var asked = quoteAsked;
    var todo = rounds();
    quoteTimer = setTimeout(function () {
      request("PATCH", { edits: todo[0].map(wire), dry_run: true }).then(function (answer) {
        if (asked !== quoteAsked) { return; }
        if (answer.status !== 200) { quoteLine.hidden = true; return; }
        var text = charged(answer.body.charge, "Saving will charge");
        if (!text) { text = " Saving will charge nothing: no cue's text changed."; }
        if (todo.length > 1) { text += " (The changes after a split are quoted once it is saved.)"; }
        quoteLine.textContent = text.trim();
        quoteLine.hidden = false;
      }).catch(function () { quoteLine.hidden = true; });
    }, 600);
  }

  function change(edit, structural) {
    pending.push(edit);
    problem.hidden = true;
    if (structural) {
      replay();
      render();
    } else {
      apply(current, edit);
      fill(list.children[edit.at], current[edit.at], edit.at);
      refresh();
    }
  }

  function changeText(at, area) {
    var text = area.value.replace(/\s+/g, " ").trim();
    if (!text) { area.value = current[at].text; return; }  // a cue is removed by merging, not emptied
    if (text !== current[at].text) { change({ op: "text", at: at, text: text }); }
  }

  // A speaker typed or chosen: one of the transcript's (by its name or "Speaker N"), or else a
  // new one, the next number, named as typed.
  function changeSpeaker(at, input) {
    var typed = input.value.trim();
    var held = speakersHeld();
    var chosen = held.filter(function (n) {
      return typed.toLowerCase() === label(n).toLowerCase() || typed === "Speaker " + n;
    })[0];
    if (!typed) { input.value = label(current[at].speaker); return; }
    if (chosen === undefined) {
      chosen = held[held.length - 1] + 1;
      if (!/^speaker \d+$/i.test(typed)) { newNames[chosen] = typed; }
    }
    if (chosen !== current[at].speaker) {
      change({ op: "speaker", at: at, speaker: chosen });
    } else {
      input.value = label(chosen);
    }
  }

  // Split the focused cue before the word the caret is in (or at).
  function splitAtCaret() {
    var area = document.activeElement;
    if (!area || !area.classList.contains("cue-text")) { return; }
    var at = position(area.closest(".cue"));
    changeText(at, area);
    var before = area.value.slice(0, area.selectionStart);
    var word = before.split(/\s+/).filter(Boolean).length;
    if (/\S$/.test(before) && /^\S/.test(area.value.slice(area.selectionStart))) { word -= 1; }
    if (word < 1 || word >= current[at].words.length) {
      showProblem("Put the caret between two words of the cue to split it there.");
      return;
    }
    change({ op: "split", at: at, word: word }, true);
    list.children[at + 1].querySelector(".cue-text").focus();
  }

  function undo() {
    if (busy || !pending.length) { return; }
    pending.pop();
    replay();
    render();
  }

  function seek(at) {
    if (player && current[at]) {
      player.currentTime = current[at].start + 0.001;
      highlight();
    }
  }

  function playing() {
    if (!player) { return -1; }
    var t = player.currentTime;
    for (var i = current.length - 1; i >= 0; i -= 1) {
      if (current[i].start <= t) { return t < current[i].end ? i : -1; }  // -1: between two cues
    }
    return -1;
  }

  function highlight() {
    var now = playing();
    Array.prototype.forEach.call(list.children, function (item, at) {
      var on = at === now;
      if (on && !item.classList.contains("playing") && !root.contains(document.activeElement)) {
        item.scrollIntoView({ block: "nearest" });
      }
      item.classList.toggle("playing", on);
      if (on) { item.setAttribute("aria-current", "true"); } else { item.removeAttribute("aria-current"); }
    });
  }

  function move(step) {
    var area = document.activeElement;
    var at = area && area.closest && area.closest(".cue") ? position(area.closest(".cue")) : playing();
    var next = Math.min(Math.max(at + step, 0), current.length - 1);
    if (list.children[next]) {
      list.children[next].querySelector(".cue-text").focus();
      seek(next);
    }
  }

  function minutes(seconds) {  // billing.pricing.format_minutes
    var text = String(Math.round(seconds / 6) / 10);
    return text === "1" ? "1 minute" : text + " minutes";
  }

  function showProblem(text) {
    problem.textContent = text;
    problem.hidden = false;
  }

  function request(method, body) {
    var headers = { Accept: "application/json", "X-CSRFToken": csrf };
    if (body) {
      headers["Content-Type"] = "application/json";
      headers["If-Match"] = saved.etag;
    }
    return fetch(root.getAttribute("data-segments-url"), {
      method: method, credentials: "same-origin", headers: headers, body: body ? JSON.stringify(body) : undefined
    }).then(function (response) {
      return response.json().then(function (json) { return { status: response.status, body: json }; });
    });
  }

  function load() {
    return request("GET").then(function (answer) {
      if (answer.status !== 200) { throw new Error(String(answer.body.detail)); }
      saved = answer.body;
      pending = [];
      newNames = {};
      conflict.hidden = true;
      replay();
      render();
    }).catch(function () { status.textContent = "The transcript could not be read; reload the page."; });
  }

  var FIELD = { text: "text", speaker: "speaker", split: "word" };  // what each change carries

  function wire(change) {
    var edit = { op: change.op, index: change.at };
    edit[FIELD[change.op]] = change[FIELD[change.op]];
    return edit;
  }

  function rounds() {
    var out = [[]];
    pending.forEach(function (change) {
      out[out.length - 1].push(change);
      if (change.op === "split") { out.push([]); }
    });
    return out.filter(function (round) { return round.length; });
  }

  function refused(answer) {
    if (answer.status === 412) {
      conflict.querySelector("[data-editor-conflict-text]").textContent =
        "Someone else saved this transcript after you opened it, so your changes were not saved: " +
        "they are still shown here. Load the saved version to see theirs (your unsaved changes are then lost).";
      conflict.hidden = false;
      return;
    }
    var detail = answer.body.detail;
    showProblem(Array.isArray(detail)
      ? detail.map(function (entry) { return entry.msg; }).join(" ")
      : String(detail));
  }

  function saveNames() {
    var held = speakersHeld();
    var form = new FormData();
    var any = false;
    form.append("csrfmiddlewaretoken", csrf);
    Object.keys(newNames).forEach(function (number) {
      if (held.indexOf(Number(number)) >= 0) { form.append("speaker-" + number, newNames[number]); any = true; }
    });
    if (!any) { return Promise.resolve(); }
    return fetch(root.getAttribute("data-speakers-url"), {
      method: "POST", body: form, credentials: "same-origin", headers: { Accept: "application/json" }
    }).then(function (response) {
      return response.json().then(function (body) { return { status: response.status, body: body }; });
    }).then(function (answer) {
      newNames = {};  // saved or refused: the cues show the names the job has
      if (answer.status === 200) {
        names = answer.body.names;
      } else {
        refused(answer);
        problem.textContent = "The cues were saved, but not the new speaker's name: " + problem.textContent;
      }
    });
  }

  function save() {
    if (busy || !pending.length) { return; }
    var todo = rounds();
    var total = null;  // what the rounds charged, summed
    busy = true;
    problem.hidden = true;
    status.textContent = "Saving…";
    lastCharge = "";
    if (quoteLine) { clearTimeout(quoteTimer); quoteAsked += 1; quoteLine.hidden = true; }
    refresh();
    function next() {
      if (!todo.length) {
        var stale = document.querySelector("[data-transcript-stale]");  // the page's text below
        if (stale) { stale.hidden = false; }
        return saveNames();
      }
      var round = todo.shift();
      return request("PATCH", { edits: round.map(wire) }).then(function (answer) {
        if (answer.status !== 200) { refused(answer); return false; }
        saved = answer.body;
        pending = pending.slice(round.length);
        var charge = answer.body.charge;
        if (charge && (charge.languages.length || charge.error)) {
          if (total === null || charge.error) {
            total = charge;
          } else {
            var languages = total.languages.concat(charge.languages.filter(function (l) {
              return total.languages.indexOf(l) < 0;
            }));
            var seconds = total.seconds + charge.seconds;
            total = { seconds: seconds, minutes: minutes(seconds), cues: total.cues + charge.cues,
              languages: languages, error: null };
          }
          lastCharge = charged(total, "Charged");
        }
        return next();
      });
    }
    next().catch(function () {
      showProblem("The changes could not be sent; check the connection and save again.");
    }).then(function () {
      busy = false;
      replay();
      render();
    });
  }

  root.querySelector("[data-editor-reload]").addEventListener("click", load);
  window.addEventListener("beforeunload", function (event) {
    if (pending.length) { event.preventDefault(); event.returnValue = ""; }  // the browser asks first
  });
  saveButton.addEventListener("click", save);
  undoButton.addEventListener("click", undo);
  root.querySelector("[data-editor-next-doubt]").addEventListener("click", nextDoubt);
  if (player) { player.addEventListener("timeupdate", highlight); player.addEventListener("seeked", highlight); }
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && player) {
      event.preventDefault();
      if (player.paused) { player.play(); } else { player.pause(); }
    } else if (event.altKey && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      move(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.altKey && (event.key === "n" || event.key === "N")) {
      event.preventDefault();
      nextDoubt();
    } else if (event.altKey && event.key === "Enter") {
      event.preventDefault();
      splitAtCaret();
    } else if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      if (document.activeElement && document.activeElement.classList.contains("cue-text")) {
        changeText(position(document.activeElement.closest(".cue")), document.activeElement);
      }
      save();
    }
  });
  load();
}());
