package cli

// The prompt the prompt program sends, as `sessiond prompt` builds it (src/cli/commands/prompt-parts.ts):
// the text alone (a string prompt), or with --image, --file and --json a prompt of parts (the text
// first, then the images, the files and the JSON data, each in the order given). A path is read and
// sent as its bytes; an http(s) URL is sent as it is. Messages are the Node CLI's.

import (
	"errors"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"net/url"
	"os"
	"regexp"
	"strings"
	"syscall"

	sessiond "github.com/sessiond/sessiond/clients/go"
)

var imageTypes = []mediaType{
	{".png", "image/png"}, {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"}, {".gif", "image/gif"}, {".webp", "image/webp"},
}

var fileTypes = append(append([]mediaType{}, imageTypes...), []mediaType{
	{".pdf", "application/pdf"}, {".txt", "text/plain"}, {".md", "text/markdown"}, {".csv", "text/csv"},
	{".json", "application/json"}, {".html", "text/html"}, {".xml", "application/xml"},
}...)

type mediaType struct{ ext, typ string }

func typeOf(types []mediaType, ext string) string {
	for _, t := range types {
		if t.ext == ext {
			return t.typ
		}
	}
	return ""
}

func extensions(types []mediaType) string {
	exts := make([]string, len(types))
	for i, t := range types {
		exts[i] = t.ext
	}
	return strings.Join(exts, ", ")
}

// UsageError is a mistake in the command line (the program exits 2 with its message).
type UsageError struct{ Message string }

func (e *UsageError) Error() string { return e.Message }

func usage(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// PromptFromOptions is the prompt to admit: text alone (hasText) as a string prompt, or with
// images, files or JSON data a prompt of parts, the text first. example is a command line to show
// when neither text nor parts are given.
func PromptFromOptions(text string, hasText bool, images, files, jsons []string, example string) (string, []sessiond.PromptPart, error) {
	var parts []sessiond.PromptPart
	for _, p := range images {
		part, err := bytesOrURL("image", p, imageTypes)
		if err != nil {
			return "", nil, err
		}
		parts = append(parts, part)
	}
	for _, p := range files {
		part, err := bytesOrURL("file", p, fileTypes)
		if err != nil {
			return "", nil, err
		}
		parts = append(parts, part)
	}
	for _, j := range jsons {
		part, err := jsonPart(j)
		if err != nil {
			return "", nil, err
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		if !hasText {
			return "", nil, usage("Give the prompt text, or parts with --image, --file or --json (e.g. %s).", example)
		}
		return text, nil, nil
	}
	if hasText {
		parts = append([]sessiond.PromptPart{sessiond.TextPart(text)}, parts...)
	}
	return "", parts, nil
}

var urlRe = regexp.MustCompile(`^https?://`)

func bytesOrURL(kind, path string, types []mediaType) (sessiond.PromptPart, error) {
	flag := "--" + kind
	isURL := urlRe.MatchString(path)
	name := path
	if isURL {
		u, err := url.Parse(path)
		if err != nil || u.Host == "" {
			return sessiond.PromptPart{}, usage("%s %s: not a valid URL; give an https URL such as https://example.com/cat.png, or a path.", flag, path)
		}
		name = u.EscapedPath()
	}
	mt := typeOf(types, strings.ToLower(extname(name)))
	if isURL {
		if kind == "image" {
			return sessiond.ImageURL(path, mt), nil
		}
		if mt == "" {
			return sessiond.PromptPart{}, usage("%s %s: cannot tell the file's type from its name; give a URL ending in %s.", flag, path, extensions(types))
		}
		return sessiond.FileURL(path, mt, ""), nil
	}
	if mt == "" {
		what := "a file"
		if kind == "image" {
			what = "an image"
		}
		return sessiond.PromptPart{}, usage("%s %s: %s must be one of %s (by its name), or an https URL.", flag, path, what, extensions(types))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return sessiond.PromptPart{}, usage("%s %s: cannot read it (%s).", flag, path, errorCode(err))
	}
	if kind == "image" {
		return sessiond.ImageBytes(data, mt), nil
	}
	filename := path
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		filename = path[i+1:]
	}
	return sessiond.FileBytes(data, mt, filename), nil
}

func jsonPart(arg string) (sessiond.PromptPart, error) {
	text := []byte(arg)
	if file, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if text, err = os.ReadFile(file); err != nil {
			return sessiond.PromptPart{}, usage("--json %s: cannot read %s (%s).", arg, file, errorCode(err))
		}
	}
	v, err := wire.ParseJSON(text)
	if err != nil {
		return sessiond.PromptPart{}, usage(`--json: %v; give JSON text like '{"order": 42}' or @FILE.`, err)
	}
	return sessiond.JSONPart(v), nil
}

// extname is a path's extension as Node's path.extname gives it: from the last dot of the last
// segment (trailing slashes ignored), "" when that segment has no dot or only a leading one
// (".png" has none, "..png" is ".png").
func extname(path string) string {
	startDot, startPart, end, preDotState := -1, 0, -1, 0
	matchedSlash := true
	for i := len(path) - 1; i >= 0; i-- {
		c := path[i]
		if c == '/' {
			if !matchedSlash {
				startPart = i + 1
				break
			}
			continue
		}
		if end == -1 {
			matchedSlash = false
			end = i + 1
		}
		if c == '.' {
			if startDot == -1 {
				startDot = i
			} else if preDotState != 1 {
				preDotState = 1
			}
		} else if startDot != -1 {
			preDotState = -1
		}
	}
	if startDot == -1 || end == -1 || preDotState == 0 || (preDotState == 1 && startDot == end-1 && startDot == startPart+1) {
		return ""
	}
	return path[startDot:end]
}

// errorCode is a file error as Node names it (ENOENT, EACCES, EISDIR, ...), else its message.
func errorCode(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name, ok := errnoNames[errno]; ok {
			return name
		}
	}
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}

var errnoNames = map[syscall.Errno]string{
	syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.EISDIR: "EISDIR",
	syscall.ENOTDIR: "ENOTDIR", syscall.ELOOP: "ELOOP", syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.EMFILE: "EMFILE", syscall.ENFILE: "ENFILE", syscall.EIO: "EIO", syscall.ENXIO: "ENXIO",
}
