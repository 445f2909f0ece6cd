package sessiond

// The codec lives in internal/wire; Map and MapEntry stay here as aliases because public types
// (UnknownPayload.Fields, Any...) hold them. wire.Convert lets the codec write events and payloads.

import "github.com/sessiond/sessiond/clients/go/internal/wire"

// Map is a msgpack (or JSON) map that keeps its keys in order: what the decoder returns for every
// map, and what the canonical encoder writes in order. Use Get to look a key up.
type Map = wire.Map

// MapEntry is one key and its value in a Map.
type MapEntry = wire.MapEntry

func init() {
	wire.Convert = func(v any, json bool) (any, bool) {
		kind := frameStored
		if json {
			kind = frameJSON
		}
		switch x := v.(type) {
		case Event:
			return x.frame(kind), true
		case *Event:
			return x.frame(kind), true
		case Payload:
			return payloadMap(x), true
		}
		return nil, false
	}
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the largest integer a worker keeps exactly.
const maxSafeInteger = 1<<53 - 1
