package server

import "testing"

// TestMethodNotAllowed checks that a known path under the wrong method is
// 405 with an Allow header listing the path's methods and a JSON error,
// as ServeMux answers without a catch-all route, and that unknown paths
// stay 404.
func TestMethodNotAllowed(t *testing.T) {
	ts := newTestServer(t, func(c *Config, _ *Services) {
		c.APIKeys = []APIKey{{Key: "k", Tenant: "t"}}
	})
	tests := []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/v1/rerank", 405, "POST"},
		{"PUT", "/v2/rerank", 405, "POST"},
		{"GET", "/embed", 405, "POST"},
		{"DELETE", "/v1/models", 405, "GET, HEAD"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"PATCH", "/documents", 405, "POST, DELETE"},
		{"POST", "/documents/abc", 405, "GET, HEAD"},
		{"DELETE", "/metrics", 405, "GET, HEAD"},
		{"OPTIONS", "/tokenize", 405, "POST"},
		{"GET", "/v3/whatever", 404, ""},
		{"POST", "/", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			code, h, body := ts.do(t, tc.method, tc.path, "", nil)
			if tc.code == 404 {
				expectError(t, code, body, 404, TypeNotFound, "no route")
				return
			}
			expectError(t, code, body, 405, TypeMethodNotAllowed, "allowed: "+tc.allow)
			if got := h.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}
