// Greedy decoding with ONNX Runtime (npm onnxruntime-node, CPU) on a decoder
// step exported with a key/value cache (inputs ids [1, 1] and past_k<i>,
// past_v<i> [1, heads, past, head]; outputs logits and present_*), for
// bench/decoder_bench.py: each step feeds the argmax of the last logits and
// the presents back. Prints one JSON line: {"tokens": [...], "step_ms": [...]}.
//
// Usage: node ort_generate.js MODEL.onnx PROMPT_IDS(comma-separated) STEPS
//            HEADS HEAD_SIZE [--threads N]
"use strict";
const ort = require("onnxruntime-node");

async function main() {
  const argv = process.argv.slice(2);
  let threads = 0;
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--threads") threads = Number(argv[++i]);
    else positional.push(argv[i]);
  }
  if (positional.length !== 5) {
    console.error("usage: node ort_generate.js MODEL PROMPT_IDS STEPS HEADS HEAD_SIZE [--threads N]");
    process.exit(2);
  }
  const [model, promptText, stepsText, headsText, headText] = positional;
  const options = { executionMode: "sequential", graphOptimizationLevel: "all" };
  if (threads > 0) {
    options.intraOpNumThreads = threads;
    options.interOpNumThreads = 1;
  }
  const session = await ort.InferenceSession.create(model, options);
  const heads = Number(headsText), head = Number(headText);
  const caches = session.inputNames.filter((name) => name !== "ids");
  let past = {};
  for (const name of caches) past[name] = new ort.Tensor("float32", new Float32Array(0), [1, heads, 0, head]);
  const prompt = promptText.split(",").map(Number);
  const tokens = [], stepMs = [];
  let next = prompt[0];
  for (let step = 0; step < prompt.length - 1 + Number(stepsText); ++step) {
    const feeds = { ids: new ort.Tensor("int64", BigInt64Array.from([BigInt(next)]), [1, 1]), ...past };
    const start = process.hrtime.bigint();
    const out = await session.run(feeds);
    stepMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    const logits = out[session.outputNames[0]].data;
    let best = 0;
    for (let i = 1; i < logits.length; ++i) if (logits[i] > logits[best]) best = i;
    past = {};
    caches.forEach((name, i) => { past[name] = out[session.outputNames[i + 1]]; });
    if (step + 1 < prompt.length) next = prompt[step + 1];
    else {
      next = best;
      tokens.push(best);
    }
  }
  console.log(JSON.stringify({ tokens, step_ms: stepMs }));
}

main().catch((error) => {
  console.error(`ort_generate.js: ${error.message}`);
  process.exit(1);
});
