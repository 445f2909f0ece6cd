package sessiond

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
)

// The blob verbs: upload puts bytes into the workers' blob store in chunks (a prompt part then
// carries the reference), blob reads a chunk of a blob a session references. The blob bucket is
// the workers' only: clients reach blobs through these commands, with their user's reach.
const (
	VerbUpload = "upload" // the other verb without a session id
	VerbBlob   = "blob"   // reads only
)

// MaxBlobChunk is the most bytes of one upload chunk or blob reply (before base64).
const MaxBlobChunk = 512 * 1024

// UploadRequest is one chunk of an upload: Data at Offset, under UploadID (8-64 letters, digits, _
// or -, random per upload). Size, the whole blob's bytes, when known (nil: left out); SHA256 on the
// last chunk only (lower-case hex of the whole blob), which makes the worker assemble the blob.
type UploadRequest struct {
	UploadID  string
	Offset    int64
	Data      []byte
	MediaType string
	Size      *int64
	SHA256    string
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
