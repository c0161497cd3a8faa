// Hoist console: the live event list (the only part that needs
// JavaScript). It follows /console/events/stream, the live event stream,
// and adds each event at the top of the table, keeping the newest 200.
'use strict';
(function () {
  const rows = document.getElementById('event-rows');
  const status = document.getElementById('live-status');
  if (!rows || !status) {
    return;
  }
  let url = '/console/events/stream';
  if (status.dataset.resource) {
    url += '?resource=' + encodeURIComponent(status.dataset.resource);
  }
  const source = new EventSource(url);
  status.textContent = 'Connecting…';
  source.onopen = function () {
    status.textContent = 'Live: new events appear at the top.';
    status.dataset.state = 'open';
  };
  source.onerror = function () {
    status.textContent = 'Live: the stream was interrupted; reconnecting…';
    status.dataset.state = 'error';
  };
  source.onmessage = function (msg) {
    let ev;
    try {
      ev = JSON.parse(msg.data);
    } catch (e) {
      return;
    }
    const detail = ev.detail || {};
    const cells = [ev.time || '', ev['detail-type'] || '', (ev.resources || []).join(', '),
      [detail.type, detail.message, detail.reason].filter(Boolean).join(' · ')];
    const tr = document.createElement('tr');
    tr.className = 'event';
    for (const text of cells) {
      const td = document.createElement('td');
      td.textContent = String(text);
      tr.appendChild(td);
    }
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > 200) {
      rows.removeChild(rows.lastChild);
    }
  };
})();
