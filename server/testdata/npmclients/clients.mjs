// Drives a running hybrank server with the official OpenAI and Cohere npm
// clients and prints what they parsed as one JSON object on stdout.
// Usage: HYBRANK_URL=http://127.0.0.1:PORT HYBRANK_KEY=secret node clients.mjs
import OpenAI from "openai";
import { CohereClient, CohereClientV2 } from "cohere-ai";

const base = process.env.HYBRANK_URL;
const key = process.env.HYBRANK_KEY;
const out = {};

const openai = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
// The client asks for base64 by default and decodes it to floats.
const e1 = await openai.embeddings.create({ model: "hybrank-embed", input: ["first text", "second text here"] });
out.openai_default = { model: e1.model, usage: e1.usage, data: e1.data.map((d) => ({ index: d.index, embedding: Array.from(d.embedding) })) };
const e2 = await openai.embeddings.create({ model: "hybrank-embed", input: "first text", encoding_format: "float" });
out.openai_float = { data: e2.data.map((d) => ({ index: d.index, embedding: d.embedding })) };
try {
  await openai.embeddings.create({ model: "text-embedding-4-tiny", input: "x" });
  out.openai_unknown_model = { status: 200 };
} catch (err) {
  out.openai_unknown_model = { status: err.status, message: err.error?.message ?? String(err) };
}
// A client default name (server.Config.ClientEmbedAliases) means the embedder.
const e3 = await openai.embeddings.create({ model: "text-embedding-3-small", input: "first text", encoding_format: "float" });
out.openai_alias = { model: e3.model, dims: e3.data[0].embedding.length };
const bad = new OpenAI({ baseURL: base + "/v1", apiKey: "wrong-key", maxRetries: 0 });
try {
  await bad.embeddings.create({ model: "hybrank-embed", input: "x" });
  out.openai_bad_key = { status: 200 };
} catch (err) {
  out.openai_bad_key = { status: err.status };
}

const query = "cat dog";
const documents = ["the cat sat on the mat", "dogs chase cats in the park", "a cat and a dog are friends", "stock markets fell sharply"];
const v1 = new CohereClient({ token: key, environment: base });
const r1 = await v1.rerank({ model: "hybrank-rerank", query, documents, topN: 3, returnDocuments: true });
out.cohere_v1 = r1;
const v2 = new CohereClientV2({ token: key, environment: base });
const r2 = await v2.rerank({ model: "hybrank-rerank", query, documents, topN: 2 });
out.cohere_v2 = r2;

// Cohere's clients read an error's text from the top-level message.
try {
  await v2.rerank({ model: "no-such-reranker", query, documents });
  out.cohere_unknown_model = { status: 200 };
} catch (err) {
  out.cohere_unknown_model = { status: err.statusCode, message: err.body?.message ?? "" };
}

process.stdout.write(JSON.stringify(out) + "\n");
