package bertgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hybrank/hybrank/models"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hybrank/hybrank/internal/filehash"
	"github.com/hybrank/hybrank/models/safetensors"
)

// ImportFile is written next to config.json in every directory Import
// writes. It records where the weights came from; unlike MarkerFile it
// does not mean random weights (ReadMarker still reports a real model).
const ImportFile = "hybrank_import.json"

// SafetensorsFile is the checkpoint Import reads from the source directory.
const SafetensorsFile = "model.safetensors"

// ImportInfo is the content of ImportFile. A plain value.
type ImportInfo struct {
	Importer string `json:"importer"`
	// Source is the source directory as given to Import.
	Source string `json:"source"`
	// SafetensorsSHA256 is the hex sha256 of the source model.safetensors.
	SafetensorsSHA256 string `json:"safetensors_sha256"`
	// Copied lists the files copied unchanged from the source.
	Copied []string `json:"copied"`
	Config Config   `json:"config"`
	Params int64    `json:"params"`
}

// Files copied unchanged from the source directory when present: the
// tokenizer and the sentence-transformers description (pooling, prompts,
// normalisation), which the importer does not interpret.
var importOptional = []string{
	"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
	"modules.json", "config_sentence_transformers.json", "sentence_bert_config.json",
}

// The sentence-transformers files among importOptional: an embedder's
// description, left out of a cross-encoder (ImportRandomHead).
var stFiles = map[string]bool{"modules.json": true, "config_sentence_transformers.json": true, "sentence_bert_config.json": true}

// Sentence-transformers modules the ONNX directory can carry: the
// transformer is the graph, pooling and normalisation have no weights and
// are applied by the embedder from their config files. Any other module
// (Dense, …) has weights the graph would lack.
var stModules = map[string]bool{
	"sentence_transformers.models.Transformer": true,
	"sentence_transformers.models.Pooling":     true,
	"sentence_transformers.models.Normalize":   true,
}

// Import converts the Hugging Face BERT checkpoint in src into a model
// directory dst in the ONNX layout that generated models use, with real
// weights and no MarkerFile:
//
//	src/config.json          read (ConfigFromHF) and copied unchanged
//	src/model.safetensors    read (WeightsFromSafetensors) into onnx/model.onnx
//	src/tokenizer.json, vocab.txt (one required), tokenizer_config.json,
//	special_tokens_map.json, modules.json, config_sentence_transformers.json,
//	sentence_bert_config.json and the config.json of each module folder
//	named in modules.json (1_Pooling/…)   copied unchanged when present
//	dst/hybrank_import.json  ImportInfo
//
// config.json is written last, so a directory that has it is complete.
// Errors wrap ErrUnsupported, ErrCheckpoint, ErrBadConfig or ErrAssets and
// name the file. Import checks ctx between steps; it holds the whole model
// in memory (4 bytes per parameter, twice while encoding).
func Import(ctx context.Context, src, dst string) (ImportInfo, error) {
	return importCheckpoint(ctx, src, dst, false)
}

// ImportRandomHead imports the encoder of the BertModel checkpoint in src
// (a bi-encoder's, e.g. all-MiniLM-L6-v2) as a cross-encoder with a seeded
// random head (AddRandomHead): the shape and operators of a relevance
// cross-encoder, the activations of a trained encoder, scores that rank
// nothing. Such a model measures what generated weights cannot: how int8
// arithmetic treats a trained encoder's activation ranges and outliers, on
// a score whose spread over a candidate list comes from the text (a random
// model's barely depends on the document). dst gets the tokenizer files,
// ImportFile, a MarkerFile (RealWeights false; its note names the
// checkpoint) and a cross-encoder config.json; sentence-transformers files
// are not copied (dst is not an embedder). A checkpoint that is already a
// cross-encoder is ErrUnsupported: Import it.
func ImportRandomHead(ctx context.Context, src, dst string) (ImportInfo, error) {
	return importCheckpoint(ctx, src, dst, true)
}

func importCheckpoint(ctx context.Context, src, dst string, randomHead bool) (ImportInfo, error) {
	info := ImportInfo{Importer: "github.com/hybrank/hybrank/models/bertgen", Source: src}
	cfgRaw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return info, fmt.Errorf("bertgen: import: %w", err)
	}
	cfg, err := ConfigFromHF(cfgRaw)
	if err != nil {
		return info, fmt.Errorf("import %s: %w", src, err)
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(filepath.Clean(src))
	}
	if randomHead && cfg.Kind != BiEncoder {
		return info, fmt.Errorf("import %s: %w: a random head goes on a BertModel encoder, and this checkpoint is a %s (import it as it is)", src, ErrUnsupported, cfg.Kind)
	}
	info.Config, info.Params = cfg, cfg.Params()

	// Small files first: a bad tokenizer or module list fails before the
	// expensive work.
	var files []dirFile
	for _, name := range importOptional {
		if randomHead && stFiles[name] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return info, fmt.Errorf("bertgen: import: %w", err)
		}
		files = append(files, dirFile{name, b})
		info.Copied = append(info.Copied, name)
	}
	if err := checkImportTokenizer(files, cfg); err != nil {
		return info, fmt.Errorf("import %s: %w", src, err)
	}
	moduleFiles, err := moduleConfigs(src, files)
	if err != nil {
		return info, fmt.Errorf("import %s: %w", src, err)
	}
	for _, f := range moduleFiles {
		files = append(files, f)
		info.Copied = append(info.Copied, f.name)
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}

	stPath := filepath.Join(src, SafetensorsFile)
	sum, err := filehash.SHA256(stPath)
	if err != nil {
		return info, fmt.Errorf("bertgen: import: %w", err)
	}
	info.SafetensorsSHA256 = sum
	st, err := safetensors.Open(stPath)
	if err != nil {
		return info, fmt.Errorf("bertgen: import: %w", err)
	}
	w, err := WeightsFromSafetensors(st, cfg)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return info, fmt.Errorf("import %s: %w", stPath, err)
	}
	w.Source = SafetensorsFile + " sha256:" + sum
	if randomHead {
		AddRandomHead(w)
		w.Source += ", classification head seeded random"
		info.Config, info.Params = w.Config, w.Config.Params()
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	model, err := BuildModel(w)
	if err != nil {
		return info, err
	}
	if randomHead {
		files = append(files,
			dirFile{ImportFile, mustJSON(info)},
			dirFile{MarkerFile, mustJSON(Marker{
				Generator:   info.Importer,
				RealWeights: false,
				Note: fmt.Sprintf("encoder imported from %s (%s sha256:%s); classification head (pooler, classifier) seeded random: "+
					"a trained encoder's activations under an untrained head, so scores rank nothing", src, SafetensorsFile, sum),
				Config: w.Config,
				Params: info.Params,
			})},
			dirFile{"config.json", mustJSON(hfConfig(w.Config))})
		return info, writeDir(dst, model, files)
	}
	info.Copied = append(info.Copied, "config.json")
	files = append(files, dirFile{ImportFile, mustJSON(info)}, dirFile{"config.json", cfgRaw})
	return info, writeDir(dst, model, files)
}

// checkImportTokenizer requires a tokenizer and, for vocab.txt, that it
// fits the embedding table.
func checkImportTokenizer(files []dirFile, cfg Config) error {
	var tok, vocab []byte
	for _, f := range files {
		switch f.name {
		case "tokenizer.json":
			tok = f.data
		case "vocab.txt":
			vocab = f.data
		}
	}
	if tok == nil && vocab == nil {
		return fmt.Errorf("%w: no tokenizer.json or vocab.txt", ErrAssets)
	}
	if tok != nil && !json.Valid(tok) {
		return fmt.Errorf("%w: tokenizer.json is not valid JSON", ErrAssets)
	}
	if n := countLines(vocab); n > cfg.VocabSize {
		return fmt.Errorf("%w: vocab.txt has %d tokens, more than vocab_size %d", ErrAssets, n, cfg.VocabSize)
	}
	return nil
}

// moduleConfigs checks modules.json (when copied) and returns the config
// files of its module folders.
func moduleConfigs(src string, files []dirFile) ([]dirFile, error) {
	var raw []byte
	for _, f := range files {
		if f.name == "modules.json" {
			raw = f.data
		}
	}
	if raw == nil {
		return nil, nil
	}
	var mods []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &mods); err != nil {
		return nil, fmt.Errorf("%w: parse modules.json: %v", ErrUnsupported, err)
	}
	var out []dirFile
	for _, m := range mods {
		if !stModules[m.Type] {
			return nil, fmt.Errorf("%w: sentence-transformers module %s (%q) has weights the ONNX graph would not contain", ErrUnsupported, m.Type, m.Path)
		}
		if m.Path == "" {
			continue // the transformer itself, at the root
		}
		// Module paths are relative folder names; refuse anything that
		// would leave the directory.
		clean, err := models.ModulePath(m.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		name := clean + "/config.json"
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // Normalize has no config
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirFile{name, b})
	}
	return out, nil
}
