package contract

// This file is the JSON scanner under readObject. It walks the bytes in
// place and accepts exactly the texts encoding/json's scanner (scanner.go)
// accepts, so the reader built on it refuses what the json.Decoder it
// replaced refused: it only finds where values end, and allocates nothing
// unless arrays and objects nest more than a few levels deep.

// maxNestingDepth is encoding/json's limit on arrays and objects open at
// once in one value. The json.Decoder the reader replaced scanned each field
// value on its own, so the limit applies to each value, not counting the
// object that holds it.
const maxNestingDepth = 10000

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// white space, or len(b).
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isDigit reports whether c is a decimal digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanString returns the index just past the string that starts with the
// quote at b[i], or -1 when it is unterminated, holds a control byte or has
// a bad escape. Bytes from 0x80 up pass whether or not they are valid UTF-8,
// as in encoding/json.
func scanString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return i + 1
		case '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
	return -1
}

// skipNumber returns the index just past the number that starts at b[i], or
// -1 when none does. Like encoding/json it stops at the first byte that
// cannot continue the number, so "01" is the number 0 followed by a 1.
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

// skipLiteral returns the index just past lit if b continues with it at i,
// or -1.
func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipKey returns the index of the value after the object key that starts
// at b[i] and its colon, white space skipped, or -1 when there is no key
// and colon.
func skipKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	return skipColon(b, scanString(b, i))
}

// skipColon returns the index of the value after the white space, colon and
// white space at b[i], or -1 when there is no colon or i is -1.
func skipColon(b []byte, i int) int {
	if i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// skipValue returns the index just past the JSON value that starts at b[i]
// (not at white space), or -1 when it is malformed or nests deeper than
// maxNestingDepth. It loops rather than recursing so that deep nesting costs
// a byte per level, not a stack frame.
func skipValue(b []byte, i int) int {
	// open holds, for each array or object not yet closed, whether it is an
	// object.
	var buf [32]bool
	open := buf[:0]
	for {
		// A value starts at i, unless a key before it was malformed.
		if i < 0 || i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(open) == maxNestingDepth {
				return -1
			}
			closing := byte(']')
			if c == '{' {
				closing = '}'
			}
			if i = skipSpace(b, i+1); i < len(b) && b[i] == closing {
				i++ // an empty array or object is a whole value
			} else {
				open = append(open, c == '{')
				if c == '{' {
					i = skipKey(b, i)
				}
				continue
			}
		case '"':
			i = scanString(b, i)
		case 't':
			i = skipLiteral(b, i, "true")
		case 'f':
			i = skipLiteral(b, i, "false")
		case 'n':
			i = skipLiteral(b, i, "null")
		default:
			i = skipNumber(b, i)
		}
		if i < 0 {
			return -1
		}
		// A value ended at i: find the next one, closing the arrays and
		// objects that end here.
		for {
			if len(open) == 0 {
				return i
			}
			if i = skipSpace(b, i); i >= len(b) {
				return -1
			}
			inObject := open[len(open)-1]
			if b[i] == ',' {
				if i = skipSpace(b, i+1); inObject {
					i = skipKey(b, i)
				}
				break
			}
			if inObject && b[i] != '}' || !inObject && b[i] != ']' {
				return -1
			}
			open = open[:len(open)-1]
			i++
		}
	}
}
