package measure

import "testing"

func TestGPUAppMemory(t *testing.T) {
	csv := []byte("123, 4500\n77, 900\n123, 500\n[N/A], [N/A]\n")
	if mb, ok := gpuAppMemory(csv, 123); !ok || mb != 5000 {
		t.Errorf("pid 123: %v %v, want 5000 true", mb, ok)
	}
	if _, ok := gpuAppMemory(csv, 5); ok {
		t.Error("pid 5 found")
	}
	if _, ok := gpuAppMemory(nil, 5); ok {
		t.Error("empty output found a process")
	}
}
