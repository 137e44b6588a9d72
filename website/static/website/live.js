/* The Live page (templates/website/live.html): Start captures the microphone (getUserMedia), asks
   the site for a live key (POST data-key-url: a few minutes, this login's; the API token is never
   in the page) and opens /v1/realtime with it in the subprotocol form browsers use
   (`openai-insecure-api-key.<key>`). An AudioWorklet (live_worklet.js) turns the samples into
   PCM16 at 24 kHz (16 kHz under a context slower than 24 kHz), said in session.update, sent as
   input_audio_buffer.append every 100 ms.

   One paragraph per item (an utterance): its words so far (the joined deltas, which the server
   never takes back) and, while it is still heard, a tail marking the words still to come, styled
   apart; at .completed the paragraph holds the item's transcript. Stop ends the capture, commits
   what was heard, waits for the last words, then closes. A `transcription_session.job` event names
   the job the stream is kept as; once stopped, the page links to its page. */
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root) { return; }
  var PREFIX = "conversation.item.input_audio_transcription.";
  var FINISH_MS = 15000;  // for the last words after Stop
  var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  var button = document.getElementById("live-toggle");
  var language = document.getElementById("live-language");
  var statusLine = document.getElementById("live-status");
  var problem = document.getElementById("live-error");
  var transcript = document.getElementById("live-transcript");
  var jobLine = document.getElementById("live-job");
  var jobLink = document.getElementById("live-job-link");
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var stream = null;  // the stream running now, or null

  function say(text) { statusLine.textContent = text; }

  function fail(text) {
    problem.textContent = text;
    problem.hidden = false;
  }

  function socketUrl() {
    var scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return scheme + "//" + window.location.host + root.getAttribute("data-realtime-path") + "?intent=transcription";
  }

  function askKey() {
    return fetch(root.getAttribute("data-key-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrf },
    }).then(function (response) {
      if (!response.ok) { throw new Error("The site gave no live key (" + response.status + "); sign in again."); }
      return response.json();
    });
  }

  function base64(buffer) {
    var bytes = new Uint8Array(buffer);
    var text = "";
    for (var i = 0; i < bytes.length; i += 0x8000) {
      text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return window.btoa(text);
  }

  // --- the transcript: one paragraph per item ---

  function item(s, id) {
    var found = s.items[id];
    if (found) { return found; }
    var paragraph = document.createElement("p");
    paragraph.className = "hearing";
    paragraph.setAttribute("data-item-id", id);
    var said = document.createElement("span");
    said.className = "said";
    var tail = document.createElement("span");
    tail.className = "tail";
    tail.setAttribute("aria-label", "still listening");
    paragraph.appendChild(said);
    paragraph.appendChild(tail);
    transcript.appendChild(paragraph);
    found = { paragraph: paragraph, said: said, tail: tail, text: "", done: false };
    s.items[id] = found;
    return found;
  }

  function completed(s, id, text) {
    var it = item(s, id);
    it.done = true;
    if (!text.trim()) {  // a commit with nothing spoken
      it.paragraph.remove();
      return;
    }
    it.paragraph.className = "said";
    it.paragraph.textContent = text.trim();
  }

  function pending(s) {
    return Object.keys(s.items).some(function (id) { return !s.items[id].done; });
  }

  function showJob(s) {
    if (s.jobId && s.stopped) {
      jobLink.href = root.getAttribute("data-jobs-url") + s.jobId + "/";
      jobLine.hidden = false;
    }
  }

  function heard(s, event) {
    var kind = event.type;
    if (kind === "session.created") {
      say("Connected; starting the microphone…");
    } else if (kind === "session.updated") {
      if (!s.stopping) { say("Listening. Speak; press Stop when you are done."); }
    } else if (kind === "input_audio_buffer.speech_started") {
      item(s, event.item_id);
    } else if (kind === "input_audio_buffer.committed") {
      item(s, event.item_id);
      if (s.stopping && s.flushed) { s.committedAfterStop = true; }
    } else if (kind === PREFIX + "delta") {
      var it = item(s, event.item_id);
      it.text += event.delta;
      it.said.textContent = it.text.replace(/^\s+/, "");
    } else if (kind === PREFIX + "completed") {
      completed(s, event.item_id, event.transcript || "");
    } else if (kind === PREFIX + "failed") {
      var failed = item(s, event.item_id);
      failed.done = true;
      failed.paragraph.className = "failed";
      failed.tail.remove();
      failed.said.textContent = (failed.text ? failed.text + " " : "") + "(" + event.error.message + ")";
    } else if (kind === "transcription_session.job") {
      if (event.job && UUID.test(event.job.id || "")) { s.jobId = event.job.id; }
      showJob(s);
    } else if (kind === "error") {
      fail(event.error.message);
    }
    if (s.stopping && s.committedAfterStop && !pending(s)) { close(s); }
  }

  // --- the microphone ---

  function capture(s) {
    var Context = window.AudioContext || window.webkitAudioContext;
    s.context = new Context();
    var rate = s.context.sampleRate >= 24000 ? 24000 : 16000;
    if (s.context.sampleRate < rate) { throw new Error("This microphone's audio is slower than 16 kHz."); }
    s.socket.send(JSON.stringify({
      type: "session.update",
      session: {
        type: "transcription",
        audio: {
          input: {
            format: { type: "audio/pcm", rate: rate },
            transcription: { model: "whisper-1", language: language.value || null },
            turn_detection: { type: "server_vad" },
          },
        },
      },
    }));
    return s.context.audioWorklet.addModule(root.getAttribute("data-worklet-url")).then(function () {
      if (s.stopping || s.stopped) { return; }  // stopped, or the door refused the stream meanwhile
      var source = s.context.createMediaStreamSource(s.media);
      s.node = new window.AudioWorkletNode(s.context, "pcm-sender", {
        numberOfOutputs: 0,
        processorOptions: { rate: rate, chunk: rate / 10 },
      });
      s.node.port.onmessage = function (message) {
        if (message.data === "flushed") {
          s.flushed = true;
          send(s, { type: "input_audio_buffer.commit" });
          return;
        }
        send(s, { type: "input_audio_buffer.append", audio: base64(message.data) });
      };
      source.connect(s.node);
      return s.context.resume();
    });
  }

  function send(s, event) {
    if (s.socket && s.socket.readyState === WebSocket.OPEN) { s.socket.send(JSON.stringify(event)); }
  }

  function release(s) {
    if (s.media) { s.media.getTracks().forEach(function (track) { track.stop(); }); }
    if (s.context && s.context.state !== "closed") { s.context.close(); }
  }

  // --- start, stop, end ---

  function start() {
    problem.hidden = true;
    jobLine.hidden = true;
    transcript.textContent = "";
    button.disabled = true;
    language.disabled = true;
    say("Asking for the microphone…");
    var s = { items: {}, jobId: null, stopping: false, stopped: false, flushed: false, committedAfterStop: false };
    stream = s;
    var media = navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    Promise.all([media, askKey()]).then(function (got) {
      s.media = got[0];
      s.socket = new WebSocket(socketUrl(), ["realtime", "openai-insecure-api-key." + got[1].value]);
      s.socket.onmessage = function (message) { heard(s, JSON.parse(message.data)); };
      s.socket.onclose = function () { ended(s); };
      s.socket.onopen = function () {
        if (s.stopped) { return; }
        capture(s).then(function () {
          if (s.stopped) { return; }
          button.textContent = button.getAttribute("data-stop");
          button.classList.add("recording");
          button.disabled = false;
        }).catch(function (error) {
          if (!s.stopped) { fail("The microphone could not be read: " + error.message); }
          close(s);
        });
      };
    }).catch(function (error) {
      var denied = error && error.name === "NotAllowedError";
      fail(denied ? "The browser was not allowed to use the microphone." : error.message);
      release(s);
      ended(s);
    });
  }

  function stop(s) {
    s.stopping = true;
    button.disabled = true;
    say("Finishing the last words…");
    if (s.node) {
      s.node.port.postMessage("flush");  // its last samples, then a commit
    } else {
      s.flushed = true;
      send(s, { type: "input_audio_buffer.commit" });
    }
    if (s.media) { s.media.getTracks().forEach(function (track) { track.stop(); }); }
    s.timer = window.setTimeout(function () { close(s); }, FINISH_MS);
  }

  function close(s) {
    if (s.socket && s.socket.readyState <= WebSocket.OPEN) {
      s.socket.close(1000);
    } else {
      ended(s);
    }
  }

  function ended(s) {
    if (s.stopped) { return; }
    s.stopped = true;
    window.clearTimeout(s.timer);
    release(s);
    Object.keys(s.items).forEach(function (id) {
      var it = s.items[id];
      if (!it.done && !it.text) { it.paragraph.remove(); } else if (!it.done) { it.tail.remove(); }
    });
    if (stream === s) { stream = null; }
    button.textContent = button.getAttribute("data-start");
    button.classList.remove("recording");
    button.disabled = false;
    language.disabled = false;
    say(s.stopping ? "Stopped." : "The stream ended.");
    showJob(s);
  }

  button.addEventListener("click", function () {
    if (stream === null) { start(); } else if (!stream.stopping) { stop(stream); }
  });
})();
