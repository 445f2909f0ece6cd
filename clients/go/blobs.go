package sessiond

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// The blob verbs: upload puts bytes into the workers' blob store in chunks (a prompt part then
// carries the reference), blob reads a chunk of a blob a session references. The blob bucket is
// the workers' only: clients reach blobs through these commands, with their user's reach.
const (
	VerbUpload = "upload" // the other verb without a session id
	VerbBlob   = "blob"   // reads only
)

// MaxBlobChunk is the most bytes of one upload chunk or blob reply (before base64): UploadBlob
// sends chunks of exactly this size, the last shorter.
const MaxBlobChunk = 512 * 1024

// InlinePartBytes is the most bytes an image or a file part is sent inline by Admit; a larger one
// is uploaded first and sent as its reference.
const InlinePartBytes = 64 * 1024

// UploadRequest is one chunk of an upload: Data at Offset, under UploadID (8-64 letters, digits, _
// or -, random per upload). Size, the whole blob's bytes, when known (nil: left out); SHA256 on the
// last chunk only (lower-case hex of the whole blob), which makes the worker assemble the blob.
// Owner, on the last chunk: who may reference the blob in admissions ("": none named).
type UploadRequest struct {
	UploadID  string
	Offset    int64
	Data      []byte
	MediaType string
	Size      *int64
	SHA256    string
	Owner     string
}

// UploadBody is the upload request's JSON body.
func UploadBody(r UploadRequest) Map {
	m := Map{{Key: "uploadId", Value: r.UploadID}, {Key: "offset", Value: r.Offset}, {Key: "data", Value: base64.StdEncoding.EncodeToString(r.Data)}, {Key: "mediaType", Value: r.MediaType}}
	if r.Size != nil {
		m = append(m, MapEntry{Key: "size", Value: *r.Size})
	}
	if r.SHA256 != "" {
		m = append(m, MapEntry{Key: "sha256", Value: r.SHA256})
	}
	if r.Owner != "" {
		m = append(m, MapEntry{Key: "owner", Value: r.Owner})
	}
	return m
}

// BlobBody is the blob request's JSON body (offset left out when 0).
func BlobBody(sessionID, sha256Hex string, offset int64) Map {
	return blobBodyAt(sessionID, sha256Hex, offset, 0)
}

// blobBodyAt is BlobBody with the seq of the event that references the blob (0: not known yet).
func blobBodyAt(sessionID, sha256Hex string, offset, seq int64) Map {
	m := Map{{Key: "sessionId", Value: sessionID}, {Key: "sha256", Value: sha256Hex}}
	if offset != 0 {
		m = append(m, MapEntry{Key: "offset", Value: offset})
	}
	if seq != 0 {
		m = append(m, MapEntry{Key: "seq", Value: seq})
	}
	return m
}

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// BlobChunkAt is one chunk of the blob sha256Hex of the session, from offset, as the blob command
// answers it (Data in base64).
func (c *Client) BlobChunkAt(ctx context.Context, sessionID, sha256Hex string, offset int64) (BlobChunk, error) {
	return c.blobChunk(ctx, sessionID, sha256Hex, offset, 0)
}

// blobChunk is BlobChunkAt naming the event that references the blob (a reply's Seq), so the
// worker reads that event only.
func (c *Client) blobChunk(ctx context.Context, sessionID, sha256Hex string, offset, seq int64) (BlobChunk, error) {
	var chunk BlobChunk
	_, err := c.send(ctx, VerbBlob, sessionID, blobBodyAt(sessionID, sha256Hex, offset, seq), "", &chunk)
	return chunk, err
}

// ReadBlob reads the bytes of a blob that the session references (a prompt part's or a tool
// result's BlobRef.Sha256), chunk by chunk with the blob command, and checks them against the
// hash. A session this user may not read, or one that does not reference the blob, answers
// not_found (the same either way).
func (c *Client) ReadBlob(ctx context.Context, sessionID, sha256Hex string) ([]byte, error) {
	if !sha256Pattern.MatchString(sha256Hex) {
		return nil, &CommandError{Verb: VerbBlob, Code: CodeInvalidID,
			Message: fmt.Sprintf("Invalid blob hash %q: give the reference's sha256, 64 lower-case hex characters.", sha256Hex)}
	}
	return readBlobChunks(sha256Hex, func(offset, seq int64) (BlobChunk, error) { return c.blobChunk(ctx, sessionID, sha256Hex, offset, seq) })
}

// readBlobChunks asks for chunks from offset 0 until one says no more follow, and checks the
// whole; each request after the first names the event the first reply found the reference in.
func readBlobChunks(sha256Hex string, chunkAt func(offset, seq int64) (BlobChunk, error)) ([]byte, error) {
	var out []byte
	var seq int64
	for {
		chunk, err := chunkAt(int64(len(out)), seq)
		if err != nil {
			return nil, err
		}
		seq = chunk.Seq
		bytes, err := base64.StdEncoding.DecodeString(chunk.Data)
		if err != nil || chunk.Offset != int64(len(out)) {
			return nil, &CommandError{Verb: VerbBlob, Code: CodeInternal,
				Message: fmt.Sprintf("The blob reply at offset %d is not a chunk of blob %s from there (offset %d, %v): do the worker and this client speak the same protocol version?", len(out), sha256Hex, chunk.Offset, err)}
		}
		out = append(out, bytes...)
		if !chunk.More {
			break
		}
		if len(bytes) == 0 {
			return nil, &CommandError{Verb: VerbBlob, Code: CodeInternal, Message: fmt.Sprintf("The blob reply at offset %d is empty, with more to come.", len(out))}
		}
	}
	sum := sha256.Sum256(out)
	if got := hex.EncodeToString(sum[:]); got != sha256Hex {
		return nil, &CommandError{Verb: VerbBlob, Code: CodeDecodeFailed,
			Message: fmt.Sprintf("Blob %s as read hashes to %s (%d bytes): read it again.", sha256Hex, got, len(out))}
	}
	return out, nil
}

// UploadOptions says what an upload is. MediaType (required, e.g. image/png) is checked by the
// worker against the bytes' signature. Size is the whole blob's bytes when known ahead (0: not
// known; a source with a Len method, such as *bytes.Reader, gives it), so that one over the
// workers' limit is refused at the first chunk. Owner names who will reference the blob in
// admissions, for a trusted client admitting for an owner (the upload lets that owner use it for
// an hour); a tenant's uploads are its own.
type UploadOptions struct {
	MediaType string
	Size      int64
	Owner     string
}

// UploadBlob uploads what source reads as one blob through the workers (the upload command, in
// chunks of exactly MaxBlobChunk, the last shorter, under a random upload id) and returns its
// reference, for a prompt part: ImageBlob(ref) or FileBlob(ref, filename). The worker refuses
// bytes whose signature contradicts the media type (invalid_payload) and a blob over its limit
// (payload_too_large). Admit uploads large inline parts this way itself.
func (c *Client) UploadBlob(ctx context.Context, source io.Reader, opts UploadOptions) (BlobRef, error) {
	if source == nil {
		return BlobRef{}, &CommandError{Verb: VerbUpload, Code: CodeInvalidOption, Message: "UploadBlob needs a source to read the bytes from (an *os.File, a bytes.Reader...)."}
	}
	if strings.TrimSpace(opts.MediaType) == "" {
		return BlobRef{}, &CommandError{Verb: VerbUpload, Code: CodeInvalidOption, Message: `UploadBlob needs UploadOptions{MediaType: ...}, what the bytes are, e.g. "image/png".`}
	}
	if opts.Size < 0 {
		return BlobRef{}, &CommandError{Verb: VerbUpload, Code: CodeInvalidOption, Message: fmt.Sprintf("UploadOptions.Size is the blob's bytes (0: not known), got %d.", opts.Size)}
	}
	size := opts.Size
	if l, ok := source.(interface{ Len() int }); ok && size == 0 {
		size = int64(l.Len())
	}
	return uploadChunks(source, newUploadID(), opts.MediaType, size, opts.Owner, func(r UploadRequest) (UploadReply, error) {
		var reply UploadReply
		_, err := c.send(ctx, VerbUpload, "", UploadBody(r), "", &reply)
		return reply, err
	})
}

// newUploadID is a random upload id, upl_<32 hex digits>.
func newUploadID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "upl_" + hex.EncodeToString(b[:])
}

// uploadChunks reads source in chunks of MaxBlobChunk (one read ahead, so that the last is known)
// and sends them in order from offset 0; the last carries the whole's size and hash, and owner.
// size > 0 is sent on the others.
func uploadChunks(source io.Reader, uploadID, mediaType string, size int64, owner string, send func(UploadRequest) (UploadReply, error)) (BlobRef, error) {
	hash := sha256.New()
	var known *int64
	if size > 0 {
		known = &size
	}
	var offset int64
	read := func(buf []byte) ([]byte, bool, error) {
		n, err := io.ReadFull(source, buf)
		hash.Write(buf[:n])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return buf[:n], true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("sessiond upload: reading the source after byte %d: %w", offset, err)
		}
		return buf, false, nil
	}
	spare := make([]byte, MaxBlobChunk)
	cur, done, err := read(make([]byte, MaxBlobChunk))
	if err != nil {
		return BlobRef{}, err
	}
	for !done {
		next, end, err := read(spare)
		if err != nil {
			return BlobRef{}, err
		}
		if len(next) == 0 && end {
			break // cur is the last
		}
		if _, err := send(UploadRequest{UploadID: uploadID, Offset: offset, Data: cur, MediaType: mediaType, Size: known}); err != nil {
			return BlobRef{}, err
		}
		offset += int64(len(cur))
		spare = cur[:cap(cur)]
		cur, done = next, end
	}
	total := offset + int64(len(cur))
	reply, err := send(UploadRequest{UploadID: uploadID, Offset: offset, Data: cur, MediaType: mediaType, Size: &total, SHA256: hex.EncodeToString(hash.Sum(nil)), Owner: owner})
	if err != nil {
		return BlobRef{}, err
	}
	if reply.Blob == nil {
		return BlobRef{}, &CommandError{Verb: VerbUpload, Code: CodeInternal, Message: fmt.Sprintf("The worker did not answer the last chunk of upload %s with a reference: do the worker and this client speak the same protocol version?", uploadID)}
	}
	return *reply.Blob, nil
}

// uploadLargeParts is parts with each inline image or file part over InlinePartBytes uploaded
// first and replaced by its reference (a worker refuses a larger admission: it is one NATS
// message); parts itself when none is that large.
func uploadLargeParts(parts []PromptPart, upload func(data []byte, mediaType string) (BlobRef, error)) ([]PromptPart, error) {
	if !slices.ContainsFunc(parts, PromptPart.largeInline) {
		return parts, nil
	}
	out := make([]PromptPart, len(parts))
	for i, p := range parts {
		out[i] = p
		if !p.largeInline() {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			continue // not base64: sent as it is, for the worker to refuse naming the part
		}
		ref, err := upload(data, p.MediaType)
		if err != nil {
			var ce *CommandError
			if errors.As(err, &ce) {
				shown := *ce
				shown.Message = fmt.Sprintf("Prompt part %d (%s, %d bytes) was uploaded before the admission, and refused: %s", i, p.MediaType, len(data), ce.Message)
				return nil, &shown
			}
			return nil, err
		}
		out[i] = PromptPart{Type: p.Type, Blob: &ref}
		if p.Type == PartFile {
			out[i].Filename = p.Filename
		}
	}
	return out, nil
}

// largeInline reports an image or a file given by its bytes, over InlinePartBytes.
func (p PromptPart) largeInline() bool {
	if !p.byData() || p.MediaType == "" {
		return false
	}
	n := len(p.Data) * 3 / 4
	if strings.HasSuffix(p.Data, "==") {
		n -= 2
	} else if strings.HasSuffix(p.Data, "=") {
		n--
	}
	return n > InlinePartBytes
}
