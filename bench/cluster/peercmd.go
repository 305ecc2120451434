package cluster

import (
	"os"
	"path/filepath"

	"github.com/hybrank/hybrank/internal/artifacts"
)

// peerScript is the Python peer: Weaviate's reference inference
// containers' behaviour (sentence-transformers behind FastAPI), serving
// text2vec-transformers' and reranker-transformers' protocols.
const peerScript = "bench/peers/weaviate_inference.py"

// PeerCommand is the sidecar command that runs the peer on a node's
// sidecar port under the inference prefix the nodes call (Command's
// placeholders: {port}), with the same models as hybrank's sidecars: the
// sentence-transformers checkpoint of all-MiniLM-L6-v2 and the
// reranker profile's directory. Its packages are `make peers-weaviate`'s
// ($HYBRANK_PEERS_WEAVIATE, default .deps/peers-weaviate).
func PeerCommand(prefix, rerankDir string) Command {
	root := artifacts.ModuleRoot()
	pkgs := os.Getenv("HYBRANK_PEERS_WEAVIATE")
	if pkgs == "" {
		pkgs = filepath.Join(root, ".deps", "peers-weaviate")
	}
	return Command{
		Path: "python3",
		Args: []string{filepath.Join(root, peerScript), "--host", "127.0.0.1", "--port", "{port}", "--prefix", prefix,
			"--embed-model", filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2-st"), "--rerank-model", rerankDir},
		Env:       []string{"PYTHONPATH=" + pkgs, "PYTHONNOUSERSITE=1", "HF_HUB_OFFLINE=1"},
		ReadyPath: prefix + "/.well-known/ready",
	}
}
