/* The Live page's AudioWorklet (live.js loads it): the microphone's samples, at the AudioContext's
   rate, averaged down to `rate` (24 kHz: OpenAI's PCM16) in mono and posted to the page as PCM16
   (little-endian, as Int16Array is on every browser's platform) in chunks of `chunk` samples.
   "flush" posts what is left, then "flushed". */
class PcmSender extends AudioWorkletProcessor {
  constructor(options) {
    super();
    var wanted = options.processorOptions;
    this.step = sampleRate / wanted.rate;  // input samples per output sample (1 or more)
    this.chunk = wanted.chunk;
    this.out = new Int16Array(this.chunk);
    this.filled = 0;
    this.sum = 0;
    this.count = 0;
    this.position = 0;
    this.port.onmessage = (event) => {
      if (event.data === "flush") {
        this.post(this.filled);
        this.port.postMessage("flushed");
      }
    };
  }

  post(length) {
    if (length > 0) {
      var buffer = this.out.slice(0, length).buffer;
      this.port.postMessage(buffer, [buffer]);
    }
    this.filled = 0;
  }

  emit(value) {
    var clamped = Math.max(-1, Math.min(1, value));
    this.out[this.filled++] = clamped < 0 ? clamped * 0x8000 : clamped * 0x7fff;
    if (this.filled === this.chunk) { this.post(this.chunk); }
  }

  process(inputs) {
    var channels = inputs[0];
    if (!channels || channels.length === 0) { return true; }
    var frames = channels[0].length;
    for (var i = 0; i < frames; i++) {
      var sample = 0;
      for (var c = 0; c < channels.length; c++) { sample += channels[c][i]; }
      this.sum += sample / channels.length;
      this.count += 1;
      this.position += 1;
      if (this.position >= this.step) {  // a box filter over the samples one output stands for
        this.position -= this.step;
        this.emit(this.sum / this.count);
        this.sum = 0;
        this.count = 0;
      }
    }
    return true;
  }
}

registerProcessor("pcm-sender", PcmSender);
