package sessiond

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// ReadBlob's reading: chunks asked for from each offset until none follows, the whole checked
// against the hash, each request after the first naming the seq the first reply gave; a reply out
// of place, an empty chunk with more to come and bytes of another hash are refused.
func TestReadBlobChunks(t *testing.T) {
	blob := make([]byte, 2*MaxBlobChunk+123)
	for i := range blob {
		blob[i] = byte(i * 31)
	}
	sum := sha256.Sum256(blob)
	hash := hex.EncodeToString(sum[:])
	chunks := func(mutate func(offset int64, c *BlobChunk)) func(int64, int64) (BlobChunk, error) {
		return func(offset, _ int64) (BlobChunk, error) {
			end := min(offset+MaxBlobChunk, int64(len(blob)))
			c := BlobChunk{Sha256: hash, Size: int64(len(blob)), MediaType: "image/png", Offset: offset, Data: base64.StdEncoding.EncodeToString(blob[offset:end]), More: end < int64(len(blob)), Seq: 7}
			if mutate != nil {
				mutate(offset, &c)
			}
			return c, nil
		}
	}
	var asked, seqs []int64
	got, err := readBlobChunks(hash, func(offset, seq int64) (BlobChunk, error) {
		asked = append(asked, offset)
		seqs = append(seqs, seq)
		return chunks(nil)(offset, seq)
	})
	if err != nil || string(got) != string(blob) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(blob))
	}
	if len(asked) != 3 || asked[1] != MaxBlobChunk || asked[2] != 2*MaxBlobChunk {
		t.Fatalf("asked at %v", asked)
	}
	if seqs[0] != 0 || seqs[1] != 7 || seqs[2] != 7 {
		t.Fatalf("asked with seqs %v, want 0 then the first reply's 7", seqs)
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

// pngBytes is n bytes of a PNG: its signature, then random bytes (so each test's blob is new).
func pngBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	copy(b, []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})
	return b
}

// blobRefOfImage is the blob reference of the first image part of the session's input.admitted.
func blobRefOfImage(t *testing.T, events []Event) *BlobRef {
	t.Helper()
	for _, e := range events {
		if p, ok := e.Payload.(*InputAdmitted); ok {
			for _, part := range p.Prompt.Parts {
				if part.Type == PartImage {
					if part.Blob == nil {
						t.Fatalf("the image part was kept inline (%d base64 characters), not stored as a blob", len(part.Data))
					}
					return part.Blob
				}
			}
		}
	}
	t.Fatalf("no input.admitted with an image part among %d events", len(events))
	return nil
}

// A 1.5 MB image admitted with the Node CLI (`sessiond prompt --nats --image`, which uploads it in
// chunks) to a real worker whose blob bucket `sessiond setup` made, then read back by the Go client
// as the client user: its events hold the reference, ReadBlob the exact bytes in three chunks.
func TestReadBlobFromWorker(t *testing.T) {
	w := getWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// the workers' blob bucket is there, as `sessiond setup` makes it
	admin, err := nats.Connect(w.url, nats.UserInfo(w.users["admin"].User, w.users["admin"].Pass), nats.CustomInboxPrefix("_INBOX_admin"))
	if err != nil {
		t.Fatalf("connect as admin: %v", err)
	}
	defer admin.Close()
	js, err := admin.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.StreamInfo("OBJ_SESSIOND_BLOBS"); err != nil {
		t.Fatalf("the blob bucket's stream OBJ_SESSIOND_BLOBS: %v", err)
	}

	image := pngBytes(t, 1536*1024)
	file := filepath.Join(t.TempDir(), "photo.png")
	if err := os.WriteFile(file, image, 0o600); err != nil {
		t.Fatal(err)
	}
	session := newSession(t)
	cli := exec.CommandContext(ctx, "node", filepath.Join(repoRoot(), "bin", "sessiond.js"), "prompt", session, "what is in this photo?",
		"--image", file, "--nats", w.url, "--nats-user", w.users["client"].User)
	cli.Dir = repoRoot()
	cli.Env = append(os.Environ(), "SESSIOND_NATS_PASS="+w.users["client"].Pass, "FORCE_COLOR=0")
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("sessiond prompt --nats --image: %v\n%s", err, out)
	}

	c := w.connect(t, "client")
	events, err := c.Events(ctx, session, EventsOptions{})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	ref := blobRefOfImage(t, events)
	sum := sha256.Sum256(image)
	if ref.Sha256 != hex.EncodeToString(sum[:]) || ref.Size != int64(len(image)) || ref.MediaType != "image/png" {
		t.Fatalf("the reference %+v is not the image's (%d bytes)", *ref, len(image))
	}
	// the bytes are in the bucket, one object named by their hash
	obs, err := js.ObjectStore("SESSIOND_BLOBS")
	if err != nil {
		t.Fatalf("the blob bucket: %v", err)
	}
	if info, err := obs.GetInfo(ref.Sha256); err != nil || info.Size != uint64(len(image)) {
		t.Fatalf("the object %s in the bucket: %+v, %v", ref.Sha256, info, err)
	}

	got, err := c.ReadBlob(ctx, session, ref.Sha256)
	if err != nil {
		t.Fatalf("ReadBlob: %v", err)
	}
	if !bytes.Equal(got, image) {
		t.Fatalf("ReadBlob gave %d bytes, not the image's %d", len(got), len(image))
	}
	first, err := c.BlobChunkAt(ctx, session, ref.Sha256, 0)
	if err != nil || !first.More || first.Size != int64(len(image)) || base64.StdEncoding.DecodedLen(len(first.Data)) < MaxBlobChunk {
		t.Fatalf("the first chunk: more %v, size %d, %d base64 characters, %v", first.More, first.Size, len(first.Data), err)
	}
	last, err := c.BlobChunkAt(ctx, session, ref.Sha256, 2*MaxBlobChunk)
	if err != nil || last.More || last.Offset != 2*MaxBlobChunk {
		t.Fatalf("the last chunk: more %v, offset %d, %v", last.More, last.Offset, err)
	}

	// through a session that does not reference it, or none: not_found
	other := newSession(t)
	w.admit(t, other, "no image here")
	for _, s := range []string{other, newSession(t)} {
		if _, err := c.ReadBlob(ctx, s, ref.Sha256); ErrorCode(err) != "not_found" {
			t.Fatalf("ReadBlob through session %s: %v, want not_found", s, err)
		}
	}
}

// A tenant's image admitted inline (160 KiB: over 64 KiB, so the worker stores it as a blob, and
// under the 256 KiB a prompt may have on NATS) is read back by that tenant; another tenant asking
// through the same session, or through its own that does not reference it, gets not_found.
func TestTenantReadsOnlyItsOwnBlobs(t *testing.T) {
	w := getTenantWorld(t)
	acme := connectTenant(t, w, "acme")
	globex := connectTenant(t, w, "globex")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	image := pngBytes(t, 160*1024)
	session := newSession(t)
	if _, err := acme.Admit(ctx, session, AdmitRequest{Parts: []PromptPart{TextPart("look"), ImageBytes(image, "image/png")}}); err != nil {
		t.Fatalf("admit as acme: %v", err)
	}
	events, err := acme.Events(ctx, session, EventsOptions{})
	if err != nil {
		t.Fatalf("events as acme: %v", err)
	}
	ref := blobRefOfImage(t, events)
	got, err := acme.ReadBlob(ctx, session, ref.Sha256)
	if err != nil || !bytes.Equal(got, image) {
		t.Fatalf("ReadBlob as acme: %d bytes (want %d), %v", len(got), len(image), err)
	}
	if _, err := globex.ReadBlob(ctx, session, ref.Sha256); ErrorCode(err) != "not_found" {
		t.Fatalf("ReadBlob of acme's blob as globex: %v, want not_found", err)
	}
	// globex's own session that references nothing: not_found too
	mine := newSession(t)
	if _, err := globex.Admit(ctx, mine, AdmitRequest{Prompt: "nothing attached"}); err != nil {
		t.Fatalf("admit as globex: %v", err)
	}
	if _, err := globex.ReadBlob(ctx, mine, ref.Sha256); ErrorCode(err) != "not_found" {
		t.Fatalf("ReadBlob of acme's blob through globex's session: %v, want not_found", err)
	}
}
