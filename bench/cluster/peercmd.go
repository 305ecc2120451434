package cluster

import (
	"fmt"
	"path/filepath"

	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/internal/artifacts"
)

// PeerCommand is the sidecar command that runs the Python peer (Weaviate's
// reference inference containers reproduced: sentence-transformers behind
// FastAPI, serving text2vec-transformers' and reranker-transformers'
// protocols; package peers owns its command line) on a node's sidecar port
// (Command's {port}) under the inference prefix the nodes call, with the
// models of hybrank's sidecars: the sentence-transformers checkpoint of
// all-MiniLM-L6-v2 (the one hybrank's export was imported from) and the
// reranker's directory, answering the sigmoid of the cross-encoder's score
// as hybrank does, with torch's intra-op threads set to threads, the
// sidecars' thread budget (their threads per call × calls at once). Its
// packages are `make peers-weaviate`'s.
func PeerCommand(prefix, rerankDir string, threads int) (Command, error) {
	path, args, env, err := peers.InferenceConfig().InferenceCommand(peers.InferenceArgs{
		Prefix: prefix, EmbedDir: filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2-st"), RerankDir: rerankDir,
		Threads: threads, Device: "cpu", Vectorizer: peers.VectorizerST, Sigmoid: true,
	}, "{port}")
	if err != nil {
		return Command{}, fmt.Errorf("cluster: peer command: %w", err)
	}
	return Command{Path: path, Args: args, Env: env, ReadyPath: prefix + "/.well-known/ready"}, nil
}
