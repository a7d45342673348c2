package watch

import (
	"bytes"
	"io"
	"strings"
)

// ContentType is the media type of a watch stream.
const ContentType = "text/event-stream"

// encodeEvent writes one server-sent event: the id, the event name and
// the data, one "data:" line per line of data (JSON has none unless
// indented), ended by a blank line.
func encodeEvent(w io.Writer, id, event string, data []byte) error {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(oneLine(id))
		b.WriteByte('\n')
	}
	if event != "" {
		b.WriteString("event: ")
		b.WriteString(oneLine(event))
		b.WriteByte('\n')
	}
	for _, line := range bytes.Split(normalize(data), []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// encodeComment writes a comment line (a heartbeat), which clients
// ignore.
func encodeComment(w io.Writer, text string) error {
	_, err := io.WriteString(w, ": "+oneLine(text)+"\n\n")
	return err
}

// oneLine keeps a field value on its line: SSE has no escaping.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// normalize turns CRLF and CR line ends into LF (the data lines split on
// them).
func normalize(b []byte) []byte {
	if !bytes.ContainsRune(b, '\r') {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}
