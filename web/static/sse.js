// A reader of Server-Sent Events from a fetch response body (EventSource
// cannot POST or send an Authorization header).

const lineEnd = /\r\n|\r|\n/;

// readEvents yields each event of a text/event-stream body as
// {event, data, id}: the event name ("message" when none), the data lines
// joined by newlines and the event's id ("" when it has none; a client
// resumes after it with Last-Event-ID). Comments (": ping") and the retry
// field are skipped. Leaving the loop early cancels the body, which closes the
// connection.
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let event = '';
  let data = [];
  let id = '';
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        // A stream that ends without a blank line drops the half event,
        // as EventSource does.
        return;
      }
      buf += value;
      for (;;) {
        const m = lineEnd.exec(buf);
        if (!m) break;
        // A lone \r at the end may be the first half of \r\n.
        if (m[0] === '\r' && m.index === buf.length - 1) break;
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length) yield { event: event || 'message', data: data.join('\n'), id };
          event = '';
          data = [];
          id = '';
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'event') event = val;
        else if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
      }
    }
  } finally {
    if (!finished) reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
