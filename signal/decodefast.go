package signal

import "encoding/json"

// decodeFast is Decode for the bodies senders actually send: valid JSON
// with no duplicate key and no nesting past MaxDepth. It walks the body
// once, keeping only the known top-level fields, where encoding/json's
// token reader allocated for every token and decoded each scalar twice
// (issue 21: a tenth of a signal's CPU in hoox). It returns false for any
// body it does not accept, and Decode then reads that body the slow way,
// which finds the error and says where: the two never disagree on a body
// both accept (TestDecodeFastAgreesWithTheTokenReader, FuzzDecode).
// body is valid UTF-8 without a byte order mark (Decode checks both
// first), so an unescaped string is its own bytes.
func decodeFast(body []byte, bomLen int) (*Raw, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	p := fastParser{body: body, bomLen: bomLen}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	raw := &Raw{fields: make(map[string]value, 8)}
	if _, ok := p.object(i, 1, raw); !ok {
		return nil, false
	}
	return raw, true
}

// fastParser reads a body json.Valid accepted, so it checks only what
// Decode adds: duplicate keys and depth.
type fastParser struct {
	body   []byte
	bomLen int
}

// object reads the object at i (its '{'), depth objects and arrays deep
// counting itself, and returns the offset after its '}'. With raw (the
// top level) it keeps the known fields' values.
func (p *fastParser) object(i, depth int, raw *Raw) (int, bool) {
	b := p.body
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return i + 1, true
	}
	// Objects hold few keys: a slice beats a map.
	var keys []string
	for {
		key, end, ok := p.str(i)
		if !ok {
			return 0, false
		}
		for _, k := range keys {
			if k == key {
				return 0, false
			}
		}
		keys = append(keys, key)
		i = skipSpace(b, end) // ':'
		i = skipSpace(b, i+1) // the value
		known := raw != nil && isKnownField(key)
		if known {
			v, end, ok := p.field(i, depth)
			if !ok {
				return 0, false
			}
			raw.fields[key] = v
			i = end
		} else if i, ok = p.skip(i, depth); !ok {
			return 0, false
		}
		i = skipSpace(b, i)
		if b[i] == '}' {
			return i + 1, true
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// field reads a known top-level field's value at i, as Decode keeps it.
func (p *fastParser) field(i, depth int) (value, int, bool) {
	v := p.located(i)
	switch p.body[i] {
	case '{':
		end, ok := p.skip(i, depth)
		if !ok {
			return value{}, 0, false
		}
		v.kind, v.text = kindObject, string(p.body[i:end])
		return v, end, true
	case '[':
		if depth >= MaxDepth {
			return value{}, 0, false
		}
		v.kind = kindArray
		b := p.body
		j := skipSpace(b, i+1)
		if b[j] == ']' {
			v.text = string(b[i : j+1])
			return v, j + 1, true
		}
		for {
			item := p.located(j)
			var end int
			switch b[j] {
			case '{', '[':
				var ok bool
				if end, ok = p.skip(j, depth+1); !ok {
					return value{}, 0, false
				}
				item.kind = kindArray
				if b[j] == '{' {
					item.kind = kindObject
				}
			default:
				var ok bool
				if item, end, ok = p.scalar(j, item); !ok {
					return value{}, 0, false
				}
			}
			v.items = append(v.items, item)
			j = skipSpace(b, end)
			if b[j] == ']' {
				v.text = string(b[i : j+1])
				return v, j + 1, true
			}
			j = skipSpace(b, j+1)
		}
	default:
		return p.scalar(i, v)
	}
}

// located is a value located at i, as Decode reports positions.
func (p *fastParser) located(i int) value {
	var v value
	v.line, v.col, v.offset = position(p.body, i, p.bomLen)
	return v
}

// scalar reads the string, number, true, false or null at i into v.
func (p *fastParser) scalar(i int, v value) (value, int, bool) {
	b := p.body
	switch c := b[i]; {
	case c == '"':
		s, end, ok := p.str(i)
		v.kind, v.text = kindString, s
		return v, end, ok
	case c == 't':
		v.kind, v.text = kindBool, "true"
		return v, i + 4, true
	case c == 'f':
		v.kind, v.text = kindBool, "false"
		return v, i + 5, true
	case c == 'n':
		v.kind = kindNull
		return v, i + 4, true
	default:
		end := numberEnd(b, i)
		v.kind, v.text = kindNumber, string(b[i:end])
		return v, end, true
	}
}

// skip passes over the value at i, depth containers deep, checking the
// nested objects' keys and the depth.
func (p *fastParser) skip(i, depth int) (int, bool) {
	b := p.body
	switch b[i] {
	case '{':
		if depth >= MaxDepth {
			return 0, false
		}
		return p.object(i, depth+1, nil)
	case '[':
		if depth >= MaxDepth {
			return 0, false
		}
		j := skipSpace(b, i+1)
		if b[j] == ']' {
			return j + 1, true
		}
		for {
			end, ok := p.skip(j, depth+1)
			if !ok {
				return 0, false
			}
			j = skipSpace(b, end)
			if b[j] == ']' {
				return j + 1, true
			}
			j = skipSpace(b, j+1)
		}
	case '"':
		_, end, ok := p.strEnd(i)
		return end, ok
	case 't', 'n':
		return i + 4, true
	case 'f':
		return i + 5, true
	default:
		return numberEnd(b, i), true
	}
}

// str decodes the string at i (its opening quote) and returns the offset
// after its closing quote. A string with escapes is decoded by
// encoding/json itself, so both paths read it the same.
func (p *fastParser) str(i int) (string, int, bool) {
	escaped, end, ok := p.strEnd(i)
	if !ok {
		return "", 0, false
	}
	if !escaped {
		return string(p.body[i+1 : end-1]), end, true
	}
	var s string
	if err := json.Unmarshal(p.body[i:end], &s); err != nil {
		return "", 0, false
	}
	return s, end, true
}

// strEnd finds the end of the string at i and whether it holds escapes.
func (p *fastParser) strEnd(i int) (escaped bool, end int, ok bool) {
	b := p.body
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return escaped, j + 1, true
		}
	}
	return false, 0, false
}

// numberEnd returns the offset after the number at i.
func numberEnd(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}
