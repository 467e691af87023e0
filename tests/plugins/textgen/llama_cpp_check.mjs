// llama.cpp's side of the GGUF check, through node-llama-cpp's prebuilt binary (nothing compiled).
// node llama_cpp_check.mjs NODE_DIR CASES.json: for each case (a GGUF, a prompt's token ids, texts), one JSON line:
// the texts as llama.cpp tokenizes them, the prompt tokenized with its special tokens, and the greedy continuation.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [nodeDir, casesPath] = process.argv.slice(2);
const pkg = path.join(nodeDir, "node_modules", "node-llama-cpp");
const main = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).main || "./dist/index.js";
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(path.join(pkg, main)).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
for (const c of JSON.parse(fs.readFileSync(casesPath, "utf8"))) {
  const model = await llama.loadModel({modelPath: c.gguf});
  const context = await model.createContext({contextSize: 256, threads: 1});
  const greedy = [];
  // evaluate() ends by itself at an end-of-generation token, without yielding it
  if (c.new_tokens > 0) {
    for await (const token of context.getSequence().evaluate(c.prompt_ids, {temperature: 0})) {
      greedy.push(token);
      if (greedy.length >= c.new_tokens) break;
    }
  }
  console.log(JSON.stringify({
    texts: c.texts.map((t) => Array.from(model.tokenize(t, false))),
    prompt: Array.from(model.tokenize(c.prompt, true)),
    greedy,
  }));
  await context.dispose();
  await model.dispose();
}
