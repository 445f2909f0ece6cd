package sessiond

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
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

// A 1.5 MB image admitted inline with Admit (which uploads it first, in chunks) to a real worker
// whose blob bucket `sessiond setup` made, then read back as the client user: its events hold the
// reference, ReadBlob the exact bytes in three chunks.
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
	session := newSession(t)
	c := w.connect(t, "client")
	parts := []PromptPart{TextPart("what is in this photo?"), ImageBytes(image, "image/png")}
	if _, err := c.Admit(ctx, session, AdmitRequest{Parts: parts}); err != nil {
		t.Fatalf("admit a 1.5 MB image: %v", err)
	}
	if parts[1].Blob != nil || parts[1].Data == "" {
		t.Fatal("Admit changed the caller's parts")
	}
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

// A tenant's image admitted inline (160 KiB: over 64 KiB, so Admit uploads it first, the tenant's
// own blob) is read back by that tenant; another tenant asking through the same session, or
// through its own that does not reference it, gets not_found.
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

// piecesReader reads data in pieces of the given sizes, in turn (a file stream's odd reads).
type piecesReader struct {
	data  []byte
	sizes []int
	turn  int
}

func (r *piecesReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), r.sizes[r.turn%len(r.sizes)])
	r.turn++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// UploadBlob's chunks: exactly MaxBlobChunk each from a source read in odd pieces, at offsets in
// order under one upload id, the known size on each; the last shorter, with the whole's size and
// hash and the owner. A blob of whole chunks ends with a full chunk, an empty one is one empty chunk.
func TestUploadChunks(t *testing.T) {
	type sent struct {
		r    UploadRequest
		data []byte
	}
	upload := func(data []byte, size int64, owner string) ([]sent, BlobRef, error) {
		var got []sent
		ref, err := uploadChunks(&piecesReader{data: data, sizes: []int{1, 7777, 300001, 13}}, "upl_test_1", "image/png", size, owner, func(r UploadRequest) (UploadReply, error) {
			got = append(got, sent{r, append([]byte(nil), r.Data...)})
			if r.SHA256 == "" {
				return UploadReply{Received: r.Offset + int64(len(r.Data))}, nil
			}
			return UploadReply{Received: *r.Size, Blob: &BlobRef{Sha256: r.SHA256, Size: *r.Size, MediaType: r.MediaType}}, nil
		})
		return got, ref, err
	}
	for _, c := range []struct {
		name       string
		n          int
		size       int64
		owner      string
		lens       []int
		sizeOnEach bool
	}{
		{"odd tail, size known, owner", 3*MaxBlobChunk + 5, 3*MaxBlobChunk + 5, "alice", []int{MaxBlobChunk, MaxBlobChunk, MaxBlobChunk, 5}, true},
		{"whole chunks, size unknown", 2 * MaxBlobChunk, 0, "", []int{MaxBlobChunk, MaxBlobChunk}, false},
		{"small", 100, 0, "", []int{100}, false},
		{"empty", 0, 0, "", []int{0}, false},
	} {
		data := make([]byte, c.n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		got, ref, err := upload(data, c.size, c.owner)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sum := sha256.Sum256(data)
		if ref.Sha256 != hex.EncodeToString(sum[:]) || ref.Size != int64(c.n) {
			t.Fatalf("%s: reference %+v", c.name, ref)
		}
		if len(got) != len(c.lens) {
			t.Fatalf("%s: %d chunks, want %d", c.name, len(got), len(c.lens))
		}
		var whole []byte
		for i, g := range got {
			last := i == len(got)-1
			if g.r.UploadID != "upl_test_1" || g.r.Offset != int64(len(whole)) || len(g.data) != c.lens[i] || g.r.MediaType != "image/png" {
				t.Fatalf("%s: chunk %d: id %s, offset %d (want %d), %d bytes (want %d)", c.name, i, g.r.UploadID, g.r.Offset, len(whole), len(g.data), c.lens[i])
			}
			whole = append(whole, g.data...)
			switch {
			case last && (g.r.SHA256 != ref.Sha256 || g.r.Size == nil || *g.r.Size != int64(c.n) || g.r.Owner != c.owner):
				t.Fatalf("%s: the last chunk %+v", c.name, g.r)
			case !last && (g.r.SHA256 != "" || g.r.Owner != "" || (g.r.Size != nil) != c.sizeOnEach):
				t.Fatalf("%s: chunk %d carries sha256 %q, owner %q, size %v", c.name, i, g.r.SHA256, g.r.Owner, g.r.Size)
			}
		}
		if !bytes.Equal(whole, data) {
			t.Fatalf("%s: the chunks are not the bytes", c.name)
		}
	}

	// a reading error, and a last reply without a reference, are errors
	broken := io.MultiReader(bytes.NewReader(make([]byte, MaxBlobChunk+1)), iotestErr{})
	if _, err := uploadChunks(broken, "upl_test_2", "image/png", 0, "", func(UploadRequest) (UploadReply, error) { return UploadReply{}, nil }); !errors.Is(err, errBroken) {
		t.Fatalf("a source that fails: %v", err)
	}
	if _, err := uploadChunks(bytes.NewReader([]byte("x")), "upl_test_3", "image/png", 0, "", func(UploadRequest) (UploadReply, error) { return UploadReply{Received: 1}, nil }); ErrorCode(err) != CodeInternal {
		t.Fatalf("a last reply without a reference: %v", err)
	}
}

var errBroken = errors.New("disk on fire")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errBroken }

// Admit's parts: an image or a file by its bytes over InlinePartBytes is uploaded (its bytes, its
// media type) and replaced by its reference (a file keeps its filename); smaller ones, URLs and
// references are left as they are, and the caller's slice is not changed.
func TestUploadLargeParts(t *testing.T) {
	big, small := pngBytes(t, InlinePartBytes+1), pngBytes(t, InlinePartBytes)
	ref := BlobRef{Sha256: strings.Repeat("a", 64), Size: 1, MediaType: "x/y"}
	parts := []PromptPart{TextPart("hi"), ImageBytes(small, "image/png"), ImageBytes(big, "image/png"), ImageURL("https://example.com/a.png", ""),
		FileBytes(big, "application/pdf", "a.pdf"), ImageBlob(ref)}
	var uploaded [][]byte
	var types []string
	out, err := uploadLargeParts(parts, func(data []byte, mediaType string) (BlobRef, error) {
		uploaded = append(uploaded, data)
		types = append(types, mediaType)
		return BlobRef{Sha256: strings.Repeat("b", 64), Size: int64(len(data)), MediaType: mediaType}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(uploaded) != 2 || !bytes.Equal(uploaded[0], big) || !bytes.Equal(uploaded[1], big) || types[0] != "image/png" || types[1] != "application/pdf" {
		t.Fatalf("uploaded %d parts as %v", len(uploaded), types)
	}
	if out[2].Blob == nil || out[2].Data != "" || out[2].MediaType != "" || out[4].Blob == nil || out[4].Filename != "a.pdf" || out[4].Type != PartFile {
		t.Fatalf("the uploaded parts: %+v, %+v", out[2], out[4])
	}
	for _, i := range []int{0, 1, 3, 5} {
		if string(must(out[i].MarshalJSON())) != string(must(parts[i].MarshalJSON())) {
			t.Fatalf("part %d changed", i)
		}
	}
	if parts[2].Blob != nil || parts[4].Data == "" {
		t.Fatal("the caller's parts changed")
	}
	// none that large: the same parts; an upload refused: its error, naming the part
	same, _ := uploadLargeParts(parts[:2], nil)
	if &same[0] != &parts[0] {
		t.Fatal("parts without a large one were copied")
	}
	_, err = uploadLargeParts(parts, func([]byte, string) (BlobRef, error) {
		return BlobRef{}, &CommandError{Verb: VerbUpload, Code: CodeInvalidPayload, Message: "not a PNG"}
	})
	if ErrorCode(err) != CodeInvalidPayload || !strings.Contains(err.Error(), "Prompt part 2 (image/png") {
		t.Fatalf("a refused upload: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// UploadBlob against a real worker: a stream read in odd pieces gives the reference of its bytes,
// which an admission then carries and ReadBlob reads back; PNG bytes declared image/jpeg are
// refused with invalid_payload, by UploadBlob and by Admit; a trusted client admitting for an
// owner uploads for that owner, so the admission may reference the blob.
func TestUploadBlobToWorker(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	image := pngBytes(t, 1536*1024+321)
	ref, err := c.UploadBlob(ctx, &piecesReader{data: image, sizes: []int{3, 65537, 999, 200003}}, UploadOptions{MediaType: "image/png"})
	if err != nil {
		t.Fatalf("UploadBlob: %v", err)
	}
	sum := sha256.Sum256(image)
	if ref != (BlobRef{Sha256: hex.EncodeToString(sum[:]), Size: int64(len(image)), MediaType: "image/png"}) {
		t.Fatalf("the reference %+v is not the image's (%d bytes)", ref, len(image))
	}
	session := newSession(t)
	if _, err := c.Admit(ctx, session, AdmitRequest{Parts: []PromptPart{TextPart("this one"), ImageBlob(ref)}}); err != nil {
		t.Fatalf("admit the reference: %v", err)
	}
	got, err := c.ReadBlob(ctx, session, ref.Sha256)
	if err != nil || !bytes.Equal(got, image) {
		t.Fatalf("ReadBlob: %d bytes (want %d), %v", len(got), len(image), err)
	}

	// PNG bytes declared a JPEG: the worker's invalid_payload, from UploadBlob and from Admit
	_, err = c.UploadBlob(ctx, bytes.NewReader(pngBytes(t, 700*1024)), UploadOptions{MediaType: "image/jpeg"})
	if ErrorCode(err) != CodeInvalidPayload {
		t.Fatalf("PNG bytes uploaded as image/jpeg: %v, want invalid_payload", err)
	}
	_, err = c.Admit(ctx, newSession(t), AdmitRequest{Parts: []PromptPart{ImageBytes(pngBytes(t, 100*1024), "image/jpeg")}})
	if ErrorCode(err) != CodeInvalidPayload || !strings.Contains(err.Error(), "Prompt part 0") {
		t.Fatalf("PNG bytes admitted as image/jpeg: %v, want invalid_payload naming the part", err)
	}
	if _, err := c.UploadBlob(ctx, bytes.NewReader(image), UploadOptions{}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("no media type: %v, want invalid_option", err)
	}

	// admitting for an owner: the upload is that owner's, so the admission may use it
	owned := pngBytes(t, 300*1024)
	mine := newSession(t)
	if _, err := c.Admit(ctx, mine, AdmitRequest{Owner: "alice", Parts: []PromptPart{FileBytes(owned, "image/png", "scan.png")}}); err != nil {
		t.Fatalf("admit for owner alice: %v", err)
	}
	events, err := c.Events(ctx, mine, EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admitted, ok := events[0].Payload.(*InputAdmitted)
	if !ok || admitted.Prompt.Parts[0].Blob == nil || admitted.Prompt.Parts[0].Filename != "scan.png" {
		t.Fatalf("the admitted file part: %+v", events[0].Payload)
	}
	if got, err := c.ReadBlob(ctx, mine, admitted.Prompt.Parts[0].Blob.Sha256); err != nil || !bytes.Equal(got, owned) {
		t.Fatalf("ReadBlob of alice's file: %d bytes, %v", len(got), err)
	}
}
