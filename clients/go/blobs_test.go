package sessiond

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

// ReadBlob's reading: chunks asked for from each offset until none follows, the whole checked
// against the hash; a reply out of place, an empty chunk with more to come and bytes of another
// hash are refused.
func TestReadBlobChunks(t *testing.T) {
	blob := make([]byte, 2*MaxBlobChunk+123)
	for i := range blob {
		blob[i] = byte(i * 31)
	}
	sum := sha256.Sum256(blob)
	hash := hex.EncodeToString(sum[:])
	chunks := func(mutate func(offset int64, c *BlobChunk)) func(int64) (BlobChunk, error) {
		return func(offset int64) (BlobChunk, error) {
			end := min(offset+MaxBlobChunk, int64(len(blob)))
			c := BlobChunk{Sha256: hash, Size: int64(len(blob)), MediaType: "image/png", Offset: offset, Data: base64.StdEncoding.EncodeToString(blob[offset:end]), More: end < int64(len(blob))}
			if mutate != nil {
				mutate(offset, &c)
			}
			return c, nil
		}
	}
	var asked []int64
	got, err := readBlobChunks(hash, func(offset int64) (BlobChunk, error) {
		asked = append(asked, offset)
		return chunks(nil)(offset)
	})
	if err != nil || string(got) != string(blob) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(blob))
	}
	if len(asked) != 3 || asked[1] != MaxBlobChunk || asked[2] != 2*MaxBlobChunk {
		t.Fatalf("asked at %v", asked)
	}
	for name, c := range map[string]struct {
		mutate func(int64, *BlobChunk)
		code   string
	}{
		"another hash": {func(o int64, c *BlobChunk) {
			c.Data = base64.StdEncoding.EncodeToString([]byte("forged"))
			c.More = false
		}, CodeDecodeFailed},
		"out of place": {func(o int64, c *BlobChunk) { c.Offset = o + 1 }, CodeInternal},
		"empty, more":  {func(o int64, c *BlobChunk) { c.Data = ""; c.More = true }, CodeInternal},
		"not base64":   {func(o int64, c *BlobChunk) { c.Data = "%%%" }, CodeInternal},
	} {
		if _, err := readBlobChunks(hash, chunks(c.mutate)); ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}
