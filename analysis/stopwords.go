package analysis

// Stopword list names accepted by Config.Stopwords.
const (
	// StopwordsNone removes nothing.
	StopwordsNone = "none"
	// StopwordsBM25S is bm25s's STOPWORDS_EN (the Lucene English set,
	// 33 words); the default.
	StopwordsBM25S = "en-bm25s"
	// StopwordsBM25SPlus is bm25s's STOPWORDS_EN_PLUS (NLTK English, 179
	// entries).
	StopwordsBM25SPlus = "en-bm25s-plus"
)

// stopwordsEN is bm25s.stopwords.STOPWORDS_EN, copied verbatim.
var stopwordsEN = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if",
	"in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that",
	"the", "their", "then", "there", "these", "they", "this", "to", "was",
	"will", "with",
}

// stopwordsENPlus is bm25s.stopwords.STOPWORDS_EN_PLUS, copied verbatim.
// Entries with an apostrophe can never match a token (the scanner splits
// on it) and are kept only so the list stays a faithful copy.
var stopwordsENPlus = []string{
	"a", "about", "above", "after", "again", "against", "ain", "all", "am",
	"an", "and", "any", "are", "aren", "aren't", "as", "at", "be", "because",
	"been", "before", "being", "below", "between", "both", "but", "by",
	"can", "couldn", "couldn't", "d", "did", "didn", "didn't", "do", "does",
	"doesn", "doesn't", "doing", "don", "don't", "down", "during", "each",
	"few", "for", "from", "further", "had", "hadn", "hadn't", "has", "hasn",
	"hasn't", "have", "haven", "haven't", "having", "he", "her", "here",
	"hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
	"into", "is", "isn", "isn't", "it", "it's", "its", "itself", "just",
	"ll", "m", "ma", "me", "mightn", "mightn't", "more", "most", "mustn",
	"mustn't", "my", "myself", "needn", "needn't", "no", "nor", "not", "now",
	"o", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
	"ourselves", "out", "over", "own", "re", "s", "same", "shan", "shan't",
	"she", "she's", "should", "should've", "shouldn", "shouldn't", "so",
	"some", "such", "t", "than", "that", "that'll", "the", "their", "theirs",
	"them", "themselves", "then", "there", "these", "they", "this", "those",
	"through", "to", "too", "under", "until", "up", "ve", "very", "was",
	"wasn", "wasn't", "we", "were", "weren", "weren't", "what", "when",
	"where", "which", "while", "who", "whom", "why", "will", "with", "won",
	"won't", "wouldn", "wouldn't", "y", "you", "you'd", "you'll", "you're",
	"you've", "your", "yours", "yourself", "yourselves",
}

// Stopwords returns a copy of the named list, or nil for StopwordsNone or
// an unknown name.
func Stopwords(name string) []string {
	switch name {
	case StopwordsBM25S:
		return append([]string(nil), stopwordsEN...)
	case StopwordsBM25SPlus:
		return append([]string(nil), stopwordsENPlus...)
	}
	return nil
}
