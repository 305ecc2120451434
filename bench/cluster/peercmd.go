package cluster

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/hybrank/hybrank/internal/artifacts"
)

// peerScript is the Python peer: Weaviate's reference inference
// containers reproduced (sentence-transformers behind FastAPI), serving
// text2vec-transformers' and reranker-transformers' protocols.
const peerScript = "bench/peers/weaviate_inference.py"

// PeerCommand is the sidecar command that runs the peer on a node's
// sidecar port (Command's {port}) under the inference prefix the nodes
// call, with the models of hybrank's sidecars: the sentence-transformers
// checkpoint of all-MiniLM-L6-v2 (the one hybrank's export was imported
// from) and the reranker's directory, answering the sigmoid of the
// cross-encoder's score as hybrank does, threads intra-op threads per
// model as the sidecars have. Its packages are `make peers-weaviate`'s
// ($HYBRANK_PEERS_WEAVIATE, default .deps/peers-weaviate).
func PeerCommand(prefix, rerankDir string, threads int) Command {
	root := artifacts.ModuleRoot()
	pkgs := os.Getenv("HYBRANK_PEERS_WEAVIATE")
	if pkgs == "" {
		pkgs = filepath.Join(root, ".deps", "peers-weaviate")
	}
	return Command{
		Path: "python3",
		Args: []string{filepath.Join(root, peerScript), "--host", "127.0.0.1", "--port", "{port}", "--prefix", prefix,
			"--embed-dir", filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2-st"), "--rerank-dir", rerankDir,
			"--threads", strconv.Itoa(threads), "--device", "cpu", "--vectorizer", "sentence-transformers", "--activation", "sigmoid"},
		Env:       []string{"PYTHONPATH=" + pkgs, "PYTHONNOUSERSITE=1", "PYTHONDONTWRITEBYTECODE=1", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1"},
		ReadyPath: prefix + "/.well-known/ready",
	}
}
