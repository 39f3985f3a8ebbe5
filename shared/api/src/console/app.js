// syncplane console (issue 22): plain ES2020, no build step, no other origin. Server text goes in
// with textContent; the only HTML inserted is the server-sanitized document and the search
// snippet (escaped by the API, matches wrapped in <mark>).
'use strict';
(() => {
  const KEY = 'syncplane.token';
  const ORG_KEY = 'syncplane.orgToken';
  const SVG = 'http://www.w3.org/2000/svg';
  const DEBOUNCE_MS = 120;
  const store = window.sessionStorage;
  const state = { access: null, tenant: null, seq: 0 };
  const main = document.getElementById('sp-main');

  // ---- DOM helpers -------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    return add(node, kids);
  }
  // `kids` appended to `node`, nested lists flattened at any depth (a list of [dt, dd] pairs is a
  // list of elements) and absent ones (null, undefined, false) left out: the DOM's own append
  // would write an absent child as the text "null".
  function add(node, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  const fill = (node, ...kids) => add(clear(node), kids);
  function svg(tag, attrs, ...kids) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    for (const kid of kids.flat()) if (kid) node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    return node;
  }
  const clear = (node) => { node.replaceChildren(); return node; };
  const enc = encodeURIComponent;
  const encPath = (p) => p.split('/').map(enc).join('/');
  const num = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
  function when(iso) {
    if (!iso) return el('span', { text: 'never' });
    const d = new Date(iso);
    const text = isNaN(d) ? iso : d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
    return el('time', { datetime: iso, text });
  }
  function status(text, busy) {
    return el('p', { class: busy ? 'status busy' : 'status', role: 'status', text });
  }
  function wrapTable(label, table) {
    return el('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: 0 }, table);
  }
  function table(caption, heads, rows) {
    return el('table', {},
      el('caption', { text: caption }),
      el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, rows));
  }
  function page(title, ...kids) {
    document.title = title + ' · syncplane';
    const h1 = el('h1', { tabindex: -1, text: title });
    clear(main).append(h1, ...kids.flat().filter(Boolean));
    return h1;
  }

  // ---- API -----------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }
  // Where the API is: beside the page (`/`, an API stage's `/prod/`), or under `cargo lambda
  // watch` at `/lambda-url/sync-api/`, where ingest's routes are `/lambda-url/ingest/...`.
  const BASE = location.pathname.replace(/[^/]*$/, '');
  function apiUrl(path) {
    const watch = BASE.match(/^(.*\/lambda-url\/)sync-api\/$/);
    if (watch && path.startsWith('/api/agent-sessions/')) return watch[1] + 'ingest' + path;
    return BASE + path.slice(1);
  }
  async function api(path, opts = {}) {
    const token = opts.org ? store.getItem(ORG_KEY) : store.getItem(KEY);
    if (!token) throw new ApiError(401, 'no_token', 'no token');
    const init = { method: opts.method || 'GET', headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' }, signal: opts.signal, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' };
    if (opts.body !== undefined) { init.headers['Content-Type'] = 'application/json'; init.body = JSON.stringify(opts.body); }
    let resp;
    try { resp = await fetch(apiUrl(path), init); } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 'network', 'The server did not answer. Check your connection, then try again.');
    }
    let body = null;
    try { body = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok || !body || body.success !== true) {
      const err = (body && body.error) || {};
      throw new ApiError(resp.status, err.code || null, err.message || 'HTTP ' + resp.status);
    }
    return { status: resp.status, data: body.data };
  }
  // An image of a document, through the sync API (same origin, the reader's token), as a data:
  // URL the page's CSP allows; `null` when it cannot be shown (missing, too large, not an image).
  async function imageUrl(path) {
    const token = store.getItem(KEY);
    if (!token) return null;
    try {
      const resp = await fetch(apiUrl(path), { headers: { Authorization: 'Bearer ' + token }, credentials: 'omit', referrerPolicy: 'no-referrer' });
      if (!resp.ok) return null;
      const blob = await resp.blob();
      return await new Promise((done) => {
        const reader = new FileReader();
        reader.onload = () => done(typeof reader.result === 'string' ? reader.result : null);
        reader.onerror = () => done(null);
        reader.readAsDataURL(blob);
      });
    } catch (_) { return null; }
  }
  // Each `img[data-src]` of a rendered document shown, or replaced by its alt text.
  function loadImages(body, owner, name, docPath) {
    const base = '/api/repos/' + enc(owner) + '/' + enc(name) + '/images?path=' + enc(docPath) + '&src=';
    return Promise.all([...body.querySelectorAll('img[data-src]')].map(async (img) => {
      const url = await imageUrl(base + enc(img.getAttribute('data-src')));
      if (url) { img.src = url; img.classList.add('doc-image'); return; }
      img.replaceWith(el('span', { class: 'img-alt', text: img.getAttribute('alt') || 'image' }));
    }));
  }
  // A failure said plainly, with what to do.
  function problem(e, org) {
    if (e.status === 401) {
      return el('div', { class: 'error', role: 'alert' },
        el('p', { text: org ? 'The organization token was not accepted (401). It may be wrong, revoked or expired.' : 'The token was not accepted (401). It may be wrong or no longer valid.' }),
        el('p', {}, el('a', { href: '#/signin', text: 'Sign in again' }), ' with a valid token.'));
    }
    const what = e.status === 0 ? e.message : `The server answered ${e.status}${e.code ? ' (' + e.code + ')' : ''}: ${e.message}`;
    const todo = e.status === 503 ? 'The database or store is not reachable; try again in a moment.'
      : e.status === 404 ? 'Check the address, or go back to the list.'
        : e.status === 403 ? 'This token may only read; sign in with the write token to do this.'
          : 'Reload the page to try again.';
    return el('div', { class: 'error', role: 'alert' }, el('p', { text: what }), el('p', { text: todo }));
  }
  // Run `load` with a loading state in `box`; render errors there.
  async function loading(box, label, load, org) {
    clear(box).append(status('Loading ' + label + '…', true));
    box.setAttribute('aria-busy', 'true');
    try { await load(); } catch (e) {
      if (e.name === 'AbortError') return;
      clear(box).append(problem(e, org));
    } finally { box.removeAttribute('aria-busy'); box.querySelector('.busy')?.remove(); }
  }

  // ---- Sign-in -------------------------------------------------------------------------------
  function signin(note) {
    const msg = el('div', { id: 'sp-signin-msg', 'aria-live': 'polite' });
    const tok = el('input', { id: 'sp-token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'sp-token-help' });
    const org = el('input', { id: 'sp-org', name: 'org', type: 'password', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'sp-org-help' });
    const form = el('form', { class: 'signin', novalidate: true },
      el('div', { class: 'field' }, el('label', { for: 'sp-token', text: 'API token' }),
        tok, el('p', { id: 'sp-token-help', class: 'help', text: 'The sync API token (can start syncs) or the read token (read only): for Search, Repositories and Runs.' })),
      el('div', { class: 'field' }, el('label', { for: 'sp-org', text: 'Organization token (optional)' }),
        org, el('p', { id: 'sp-org-help', class: 'help', text: 'Starts with spr_: for Sessions and Insights.' })),
      el('button', { type: 'submit', text: 'Sign in' }), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      let api1 = tok.value.trim();
      let org1 = org.value.trim();
      if (api1.startsWith('spr_') && !org1) { org1 = api1; api1 = ''; }
      clear(msg);
      if (!api1 && !org1) { msg.append(el('p', { class: 'error', role: 'alert', text: 'Enter a token first.' })); tok.focus(); return; }
      msg.append(status('Checking the token…', true));
      const btn = form.querySelector('button');
      btn.disabled = true;
      const bad = [];
      if (api1) {
        store.setItem(KEY, api1);
        try { const r = await api('/api/whoami'); state.access = r.data.access; state.tenant = r.data.tenant; } catch (e) {
          store.removeItem(KEY); state.access = null;
          bad.push(e.status === 401 ? 'The API token was not accepted: it is wrong or no longer valid. Check it and try again.' : 'The API token could not be checked: ' + e.message);
        }
      } else store.removeItem(KEY);
      if (org1) {
        store.setItem(ORG_KEY, org1);
        try { await api('/api/agent-sessions/sessions?limit=1', { org: true }); } catch (e) {
          store.removeItem(ORG_KEY);
          bad.push(e.status === 401 ? 'The organization token was not accepted: it is wrong, revoked or expired. Check it and try again.' : 'The organization token could not be checked: ' + e.message);
        }
      } else store.removeItem(ORG_KEY);
      btn.disabled = false;
      tok.value = ''; org.value = '';
      clear(msg);
      if (bad.length) {
        msg.append(el('div', { class: 'error', role: 'alert' }, bad.map((t) => el('p', { text: t }))));
        tok.focus();
        updateChrome();
        return;
      }
      updateChrome();
      const next = store.getItem(KEY) ? '#/search' : '#/sessions';
      if (location.hash === next) route(); else location.hash = next;
    });
    const h1 = page('Sign in',
      note ? el('p', { class: 'note', text: note }) : null,
      el('p', { text: 'Your token is kept for this browser tab only and sent with each request. It never goes into an address, a log or a cookie.' }),
      form);
    if (state.navigated) h1.focus(); else tok.focus();
  }
  function updateChrome() {
    const who = document.getElementById('sp-who');
    const out = document.getElementById('sp-signout');
    const parts = [];
    if (store.getItem(KEY)) parts.push(state.access === 'write' ? 'write access' : state.access === 'read' ? 'read-only access' : 'signed in');
    if (store.getItem(ORG_KEY)) parts.push('organization');
    who.textContent = parts.length ? 'Signed in: ' + parts.join(', ') : '';
    out.hidden = parts.length === 0;
  }
  function needs(kind) {
    if (kind === 'org' && !store.getItem(ORG_KEY)) {
      page('Organization token needed',
        el('p', { text: 'Sessions and Insights read an organization\'s sessions: sign in with its read token (it starts with spr_).' }),
        el('p', {}, el('a', { href: '#/signin', text: 'Sign in with an organization token' })));
      return false;
    }
    if (kind === 'api' && !store.getItem(KEY)) { signin('Sign in with the API token or the read token to see this page.'); return false; }
    return true;
  }

  // ---- Search --------------------------------------------------------------------------------
  let searchCtl = null;
  function renderSearch(params) {
    const q = el('input', { id: 'sp-q', type: 'search', name: 'q', value: params.get('q') || '', autocomplete: 'off', 'aria-describedby': 'sp-q-help' });
    const repo = el('input', { id: 'sp-repo', name: 'repo', value: params.get('repo') || '', placeholder: 'owner/name', autocomplete: 'off' });
    const path = el('input', { id: 'sp-path', name: 'path', value: params.get('path') || '', placeholder: 'docs/guides/', autocomplete: 'off' });
    const results = el('div', { id: 'sp-results', 'aria-live': 'polite' });
    const form = el('form', { role: 'search', class: 'search', 'aria-label': 'Documents' },
      el('div', { class: 'field grow' }, el('label', { for: 'sp-q', text: 'Search documents' }), q,
        el('p', { id: 'sp-q-help', class: 'help', text: 'Words, "a phrase", -exclude, or: results come as you type.' })),
      el('div', { class: 'field' }, el('label', { for: 'sp-repo', text: 'Repository' }), repo),
      el('div', { class: 'field' }, el('label', { for: 'sp-path', text: 'Path prefix' }), path),
      el('button', { type: 'submit', text: 'Search' }));
    let timer = 0;
    const run = () => {
      const p = new URLSearchParams();
      if (q.value.trim()) p.set('q', q.value.trim());
      if (repo.value.trim()) p.set('repo', repo.value.trim());
      if (path.value.trim()) p.set('path', path.value.trim());
      history.replaceState(null, '', '#/search' + (p.toString() ? '?' + p : ''));
      search(results, q.value.trim(), repo.value.trim(), path.value.trim());
    };
    const later = () => { performance.mark('sp:keystroke'); clearTimeout(timer); timer = setTimeout(run, DEBOUNCE_MS); };
    for (const input of [q, repo, path]) input.addEventListener('input', later);
    form.addEventListener('submit', (ev) => { ev.preventDefault(); clearTimeout(timer); run(); });
    const other = el('p', { class: 'note' }, el('a', { id: 'sp-to-transcripts', href: '#/transcripts', text: 'Search session transcripts instead' }), ' (with an organization read token).');
    other.firstChild.addEventListener('click', (ev) => { ev.preventDefault(); clearTimeout(timer); location.hash = '#/transcripts' + (q.value.trim() ? '?q=' + enc(q.value.trim()) : ''); });
    page('Search', form, other, results);
    if (q.value) run(); else results.append(el('p', { class: 'empty', text: 'Type words to search every synced document and README.' }));
    if (state.navigated) q.focus();
  }
  async function search(box, q, repo, path) {
    if (searchCtl) searchCtl.abort();
    if (!q) { clear(box).append(el('p', { class: 'empty', text: 'Type words to search every synced document and README.' })); return; }
    const ctl = new AbortController();
    searchCtl = ctl;
    const list = el('ol', { class: 'hits' });
    const more = el('div', { class: 'more' });
    const p = new URLSearchParams({ q, limit: '20' });
    if (repo) p.set('repo', repo);
    if (path) p.set('path', path);
    const busy = status('Searching…', true);
    box.setAttribute('aria-busy', 'true');
    box.prepend(busy);
    try {
      const r = await api('/api/search?' + p, { signal: ctl.signal });
      if (ctl.signal.aborted) return;
      const d = r.data;
      const head = el('p', { class: 'count', text: d.hits.length ? `Results for “${d.query}”` : '' });
      clear(box);
      if (!d.hits.length) {
        box.append(el('p', { class: 'empty', text: `No document matches “${q}”${repo || path ? ' with these filters' : ''}. Try fewer or other words${repo || path ? ', or clear the filters' : ''}.` }));
      } else {
        box.append(head, list, more);
        addHits(list, d.hits);
        pager(more, d.nextCursor, 'More results', async (cursor) => {
          const p2 = new URLSearchParams(p); p2.set('cursor', cursor);
          const r2 = await api('/api/search?' + p2);
          addHits(list, r2.data.hits);
          return r2.data.nextCursor;
        });
        if (d.truncated) box.append(el('p', { class: 'note', text: 'There are more matches than are ranked: add words, or filter by repository or path, to see the rest.' }));
      }
      requestAnimationFrame(() => performance.mark('sp:results', { detail: { q } }));
    } catch (e) {
      if (e.name === 'AbortError' || ctl.signal.aborted) return;
      clear(box).append(e.status === 400 ? el('div', { class: 'error', role: 'alert' }, el('p', { text: 'The search was refused: ' + e.message }), el('p', { text: 'Change the query or the filters (a repository is owner/name).' })) : problem(e));
    } finally {
      if (searchCtl === ctl) { box.removeAttribute('aria-busy'); busy.remove(); }
    }
  }
  function docHref(kind, repository, path, anchor) {
    const base = kind === 'readme' ? '#/readme/' + encPath(repository) : '#/doc/' + encPath(repository) + '/' + encPath(path);
    return anchor ? base + '?at=' + enc(anchor) : base;
  }
  function addHits(list, hits) {
    for (const h of hits) {
      const snippet = el('p', { class: 'snippet' });
      snippet.innerHTML = h.snippet; // escaped by the API, matches in <mark> (openapi SearchHit.snippet)
      list.append(el('li', { class: 'hit' },
        el('h2', { class: 'hit-title' }, el('a', { href: docHref(h.kind, h.repository, h.path, h.heading && h.heading.anchor), text: h.title || h.path })),
        el('p', { class: 'meta' }, el('span', { text: h.repository }), ' · ', el('span', { class: 'path', text: h.path }),
          h.heading ? [' · ', el('span', { class: 'heading', text: '§ ' + h.heading.text })] : null),
        snippet,
        h.codeOwners && h.codeOwners.length ? el('p', { class: 'owners', text: 'Owners: ' + h.codeOwners.join(', ') }) : null));
    }
  }
  // A "more" button appending the next page; `next(cursor)` returns the following cursor.
  function pager(box, cursor, label, next) {
    clear(box);
    if (!cursor) return;
    const btn = el('button', { type: 'button', class: 'secondary', text: label });
    btn.addEventListener('click', async () => {
      btn.disabled = true; btn.textContent = 'Loading…';
      try { pager(box, await next(cursor), label, next); } catch (e) { clear(box).append(problem(e)); }
    });
    box.append(btn);
  }

  // ---- Repositories --------------------------------------------------------------------------
  const ORDER = { error: 0, pending: 1, ok: 2 };
  function stateBadge(s) { return el('span', { class: 'badge ' + s, text: s }); }
  async function renderRepos() {
    const box = el('div');
    page('Repositories', box);
    await loading(box, 'repositories', async () => {
      let repos = [];
      let cursor = null;
      do {
        const r = await api('/api/repos?limit=500' + (cursor ? '&cursor=' + enc(cursor) : ''));
        repos = repos.concat(r.data.repositories);
        cursor = r.data.nextCursor;
      } while (cursor);
      repos.sort((a, b) => ORDER[a.syncStatus] - ORDER[b.syncStatus] || a.fullName.localeCompare(b.fullName));
      clear(box);
      if (!repos.length) { box.append(el('p', { class: 'empty', text: 'No repository is selected yet. Install the GitHub App on repositories, then start a sync from Runs.' })); return; }
      const failed = repos.filter((r) => r.syncStatus === 'error').length;
      box.append(el('p', { class: 'count', text: `${repos.length} repositories${failed ? `, ${failed} failed (listed first)` : ''}.` }));
      box.append(wrapTable('Repositories', table('Repositories and their sync state', ['Repository', 'State', 'Problem', 'Last synced', 'Documents', 'Warnings', 'Head commit'],
        repos.map((r) => el('tr', { class: r.syncStatus === 'error' ? 'failed' : null },
          el('th', { scope: 'row' }, el('a', { href: '#/repos/' + encPath(r.fullName), text: r.fullName })),
          el('td', {}, stateBadge(r.syncStatus)),
          el('td', {}, r.syncStatus === 'error' ? [el('code', { class: 'code', text: r.syncErrorCode }), ' ', el('span', { text: r.syncError })] : ''),
          el('td', {}, when(r.lastSyncedAt)),
          el('td', { class: 'num', text: num(r.documentCount) }),
          el('td', {}, warnings(r.warnings)),
          el('td', {}, r.headCommitSha ? el('code', { title: r.headCommitSha, text: r.headCommitSha.slice(0, 12) }) : 'none'))))));
    });
  }
  function warnings(ws) {
    if (!ws || !ws.length) return el('span', { text: 'none' });
    return el('details', {}, el('summary', { text: `${ws.length} warning${ws.length > 1 ? 's' : ''}` }),
      el('ul', {}, ws.map((w) => el('li', {}, el('code', { text: w.path }), ': ', w.reason))));
  }
  async function renderRepo(owner, name) {
    const full = owner + '/' + name;
    const info = el('section', { 'aria-labelledby': 'sp-h-info' });
    const docs = el('section', { 'aria-labelledby': 'sp-h-docs' });
    const runs = el('section', { 'aria-labelledby': 'sp-h-runs' });
    page(full, el('p', {}, el('a', { href: '#/repos', text: '← All repositories' })), info, docs, runs);
    const base = '/api/repos/' + enc(owner) + '/' + enc(name);
    await Promise.all([
      loading(info, 'the repository', async () => {
        const r = (await api(base)).data;
        clear(info).append(el('h2', { id: 'sp-h-info', text: 'Sync state' }),
          el('dl', { class: 'facts' },
            fact('State', stateBadge(r.syncStatus)),
            r.syncStatus === 'error' ? fact('Problem', [el('code', { class: 'code', text: r.syncErrorCode }), ' ', el('span', { text: r.syncError })]) : null,
            fact('Last synced', when(r.lastSyncedAt)),
            fact('Documents', num(r.documentCount)),
            fact('Head commit', r.headCommitSha ? el('code', { text: r.headCommitSha.slice(0, 12) }) : 'unknown'),
            fact('Default branch', r.defaultBranch || 'unknown'),
            fact('Docs folder', r.docsPath || 'none'),
            fact('Warnings', warnings(r.warnings)),
            r.description ? fact('Description', r.description) : null,
            r.htmlUrl ? fact('GitHub', el('a', { href: r.htmlUrl, rel: 'noopener noreferrer', text: r.htmlUrl })) : null,
            r.hasReadme ? fact('README', el('a', { href: '#/readme/' + encPath(full), text: 'Read the README' })) : null));
      }),
      loading(docs, 'documents', async () => {
        const list = el('ul', { class: 'docs' });
        const more = el('div', { class: 'more' });
        const r = (await api(base + '/documents?limit=50')).data;
        clear(docs).append(el('h2', { id: 'sp-h-docs', text: 'Documents' }));
        if (!r.documents.length) { docs.append(el('p', { class: 'empty', text: 'No documents synced from this repository yet: check its docs folder, or start a sync from Runs.' })); return; }
        docs.append(list, more);
        addDocs(list, full, r.documents);
        pager(more, r.nextCursor, 'More documents', async (cursor) => {
          const r2 = (await api(base + '/documents?limit=50&cursor=' + enc(cursor))).data;
          addDocs(list, full, r2.documents);
          return r2.nextCursor;
        });
      }),
      loading(runs, 'sync runs', async () => {
        const mine = (await api('/api/sync/runs?repo=' + enc(full))).data.runs;
        clear(runs).append(el('h2', { id: 'sp-h-runs', text: 'Recent sync runs' }), runsTable(mine, 'Runs that covered ' + full));
      }),
    ]);
  }
  function fact(k, v) { return [el('dt', { text: k }), el('dd', {}, v)]; }
  function addDocs(list, full, documents) {
    for (const d of documents) {
      const outline = d.headings && d.headings.length > 1
        ? el('details', { class: 'outline' }, el('summary', { text: `Outline (${d.headings.length} headings)` }),
          el('ul', {}, d.headings.map((h) => el('li', { class: 'lvl' + h.level }, el('a', { href: docHref('document', full, d.path, h.anchor), text: h.text })))))
        : null;
      list.append(el('li', {}, el('a', { href: docHref('document', full, d.path), text: d.title || d.path }), ' ', el('span', { class: 'path', text: d.path }), outline));
    }
  }

  // ---- A document ----------------------------------------------------------------------------
  async function renderDoc(owner, name, path, at) {
    const box = el('div');
    const h1 = page(path ? path.split('/').pop() : 'README', box);
    const full = owner + '/' + name;
    const url = '/api/repos/' + enc(owner) + '/' + enc(name) + (path ? '/documents/' + encPath(path) : '/readme') + '?format=html';
    await loading(box, 'the document', async () => {
      const d = (await api(url)).data;
      h1.textContent = d.title || d.path;
      document.title = h1.textContent + ' · syncplane';
      const body = el('div', { class: 'doc-body' });
      if (typeof d.html === 'string') body.innerHTML = d.html; // sanitized by the server (ammonia)
      else body.append(el('p', { class: 'note', text: 'This document was synced before sources were kept; its plain text follows.' }), el('pre', { class: 'plain', text: d.body }));
      const images = loadImages(body, owner, name, d.path);
      const first = body.firstElementChild;
      if (first && /^H[1-6]$/.test(first.tagName) && first.textContent.trim() === h1.textContent.trim()) {
        // The page's heading is the document's first: shown once, its anchor kept for links to it.
        first.replaceWith(...first.querySelectorAll('[id]'));
      }
      const fm = Object.entries(d.frontmatter || {});
      fill(box,
        el('p', { class: 'meta' }, el('a', { href: '#/repos/' + encPath(full), text: full }), ' · ', el('span', { class: 'path', text: d.path }), ' · updated ', when(d.updatedAt)),
        el('p', { class: 'meta' }, d.codeOwners && d.codeOwners.length ? 'Owners: ' + d.codeOwners.join(', ') : 'No code owner',
          d.githubUrl ? [' · ', el('a', { href: d.githubUrl, rel: 'noopener noreferrer', text: 'View on GitHub' })] : null),
        fm.length ? el('details', { class: 'frontmatter' }, el('summary', { text: `Frontmatter (${fm.length})` }),
          el('dl', { class: 'facts' }, fm.map(([k, v]) => fact(k, typeof v === 'string' ? v : JSON.stringify(v))))) : null,
        el('article', { 'aria-label': 'Document' }, body));
      await images;
      if (at) { const t = document.getElementById('user-content-' + at); if (t) t.scrollIntoView(); }
    });
  }
  // In-document links (#anchor) scroll instead of changing the route.
  main.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('.doc-body a[href^="#"]');
    if (!a) return;
    ev.preventDefault();
    const t = document.getElementById('user-content-' + decodeURIComponent(a.getAttribute('href').slice(1)));
    if (t) t.scrollIntoView();
  });

  // ---- Runs ----------------------------------------------------------------------------------
  function runsTable(runs, caption) {
    if (!runs.length) return el('p', { class: 'empty', text: 'No sync run yet.' });
    return wrapTable(caption, table(caption, ['Run', 'Trigger', 'Scope', 'Status', 'Started', 'Finished', 'Repositories', 'Documents', 'GitHub requests (REST / GraphQL)'],
      runs.map((r) => el('tr', {},
        el('th', { scope: 'row', text: '#' + r.id }),
        el('td', { text: r.trigger }),
        el('td', { text: r.scope || 'all' }),
        el('td', {}, el('span', { class: 'badge run-' + r.status, text: r.status }), r.error ? [' ', el('code', { class: 'code', text: r.error })] : null,
          r.retryAfter ? [el('br'), 'retry after ', when(r.retryAfter)] : null),
        el('td', {}, when(r.startedAt)),
        el('td', {}, r.finishedAt ? when(r.finishedAt) : 'running'),
        el('td', { text: `${r.counts.reposSynced} synced, ${r.counts.reposUnchanged} unchanged, ${r.counts.reposFailed} failed, ${r.counts.reposRemoved} removed` }),
        el('td', { text: `+${r.counts.docsAdded} ~${r.counts.docsChanged} −${r.counts.docsRemoved}` }),
        el('td', { class: 'num', text: num(r.counts.githubRequests) + (r.counts.githubRestRequests !== undefined ? ` (${num(r.counts.githubRestRequests)} / ${num(r.counts.githubGraphqlRequests)})` : '') })))));
  }
  async function renderRuns() {
    const act = el('div', { class: 'actions' });
    const said = el('div', { 'aria-live': 'polite' });
    const box = el('div');
    page('Sync runs', act, said, box);
    const load = () => loading(box, 'sync runs', async () => {
      const runs = (await api('/api/sync/runs')).data.runs;
      clear(box).append(runsTable(runs, 'The 50 most recent sync runs, newest first'));
    });
    if (state.access === 'write') {
      const btn = el('button', { type: 'button', id: 'sp-sync', text: 'Sync all repositories now' });
      btn.addEventListener('click', async () => {
        btn.disabled = true;
        clear(said).append(status('Starting a sync…', true));
        try {
          const r = await api('/api/sync', { method: 'POST', body: {} });
          const d = r.data;
          const text = d.status === 'started' ? `Sync started: run #${d.runId} (${d.runStatus}).` : d.status === 'coalesced' ? 'A sync is already running; this request joined it.' : `Sync queued (job ${d.jobId}).`;
          clear(said).append(el('p', { class: 'ok', role: 'status', 'data-status': String(r.status), text }));
          await load();
        } catch (e) { clear(said).append(problem(e)); } finally { btn.disabled = false; }
      });
      act.append(btn);
    } else if (state.access === 'read') {
      act.append(el('p', { class: 'note', text: 'Read-only token: starting a sync needs the sync API token.' }));
    }
    await load();
  }

  // ---- Sessions ------------------------------------------------------------------------------
  async function renderSessions() {
    const box = el('div');
    page('Sessions', box);
    await loading(box, 'sessions', async () => {
      const tbody = el('tbody');
      const more = el('div', { class: 'more' });
      const d = (await api('/api/agent-sessions/sessions?limit=50', { org: true })).data;
      clear(box);
      if (!d.sessions.length) { box.append(el('p', { class: 'empty', text: `No sessions for ${d.org} yet: they appear once desktop clients sync.` })); return; }
      const find = el('form', { role: 'search', class: 'search', 'aria-label': 'Transcripts' },
        el('div', { class: 'field grow' }, el('label', { for: 'ss-q', text: 'Search transcripts' }), el('input', { id: 'ss-q', type: 'search', name: 'q', autocomplete: 'off' })),
        el('button', { type: 'submit', text: 'Search' }));
      find.addEventListener('submit', (ev) => { ev.preventDefault(); const v = find.querySelector('input').value.trim(); location.hash = '#/transcripts' + (v ? '?q=' + enc(v) : ''); });
      const exports = el('p', { class: 'exports' }, 'Export the sessions: ',
        ...exportButton('CSV', '/api/agent-sessions/sessions/export?format=csv', 'sessions.csv'), ' ',
        ...exportButton('JSON Lines', '/api/agent-sessions/sessions/export?format=jsonl', 'sessions.jsonl'));
      box.append(find, el('p', { class: 'count', text: `Organization ${d.org}, newest first.` }), exports,
        wrapTable('Sessions', el('table', {}, el('caption', { text: 'Sessions' }),
          el('thead', {}, el('tr', {}, ['Session', 'Started', 'Agent', 'Model', 'Repository', 'Branch', 'Status', 'Events', 'Tokens in / out', 'Cost'].map((h) => el('th', { scope: 'col', text: h })))),
          tbody)), more);
      addSessions(tbody, d.sessions);
      showRetention(find);
      pager(more, d.nextCursor, 'More sessions', async (cursor) => {
        const d2 = (await api('/api/agent-sessions/sessions?limit=50&cursor=' + enc(cursor), { org: true })).data;
        addSessions(tbody, d2.sessions);
        return d2.nextCursor;
      });
    }, true);
  }
  // An export (issue 34 point 4), with the organization token a plain link cannot carry. The
  // local server streams the file itself: saved from here. The deployed function puts it in the
  // transcript bucket and, asked for JSON, answers its link: opened, the bucket sends the file as
  // a download (this page's CSP lets it fetch from its own origin only).
  function exportButton(label, path, name) {
    const btn = el('button', { type: 'button', class: 'secondary', text: label });
    const said = el('span', { class: 'note', role: 'status' });
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      said.textContent = 'Exporting…';
      try {
        const resp = await fetch(apiUrl(path), { headers: { Authorization: 'Bearer ' + store.getItem(ORG_KEY), Accept: 'application/json' }, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
        const type = resp.headers.get('content-type') || '';
        const body = type.startsWith('application/json') ? await resp.json().catch(() => null) : null;
        if (!resp.ok) throw new Error((body && body.error && body.error.message) || 'HTTP ' + resp.status);
        const href = body && body.success ? body.data.url : URL.createObjectURL(await resp.blob());
        if (!/^(https?:|blob:)/.test(href)) throw new Error('the server answered no link');
        const a = el('a', { href, download: name, hidden: '' });
        document.body.append(a);
        a.click();
        a.remove();
        if (href.startsWith('blob:')) setTimeout(() => URL.revokeObjectURL(href), 60000);
        said.textContent = 'Exported ' + name + '.';
      } catch (e) {
        said.textContent = 'The export failed: ' + e.message;
      } finally {
        btn.disabled = false;
      }
    });
    return [btn, said];
  }
  // What the organization's transcript archive keeps, after `before` (issue 34 point 5).
  async function showRetention(before) {
    let k;
    try { k = (await api('/api/agent-sessions/transcripts/retention', { org: true })).data; } catch (_) { return; }
    const mb = (n) => (Number(n) / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 }) + ' MB';
    const expiry = !k.oldestSegmentAt ? 'nothing archived yet'
      : k.retentionDays ? `the oldest segment (${k.oldestSegmentAt.slice(0, 10)}) expires ${k.oldestExpiresAt.slice(0, 10)} under a ${k.retentionDays}-day retention`
        : `the oldest segment (${k.oldestSegmentAt.slice(0, 10)}) is kept until a retention is set`;
    before.after(el('p', { class: 'retention note', id: 'ss-retention', text: `Transcript archive: ${num(k.sessions)} sessions, ${num(k.files)} files, ${mb(k.compressedBytes)} stored (${mb(k.decodedBytes)} decoded); ${expiry}.` }));
  }
  function addSessions(tbody, sessions) {
    for (const s of sessions) {
      tbody.append(el('tr', {},
        el('th', { scope: 'row' }, el('a', { href: '#/sessions/' + enc(s.sessionId) + '?target=' + enc(s.computeTargetId), text: s.title || s.sessionId })),
        el('td', {}, when(s.startedAt || s.updatedAt)),
        el('td', { text: s.agent }),
        el('td', { text: s.model || '–' }),
        el('td', { class: 'path', text: s.repository || '–' }),
        el('td', { text: s.branch || '–' }),
        el('td', { text: s.status || '–' }),
        el('td', { class: 'num', text: num(s.eventCount) }),
        el('td', { class: 'num', text: `${num(s.inputTokens)} / ${num(s.outputTokens)}` }),
        el('td', { class: 'num', text: s.costUsd === null || s.costUsd === undefined ? '–' : '$' + Number(s.costUsd).toFixed(2) })));
    }
  }
  async function renderSession(id, target, params) {
    const at = params && params.get('at');
    const atFile = params && params.get('file');
    const box = el('div');
    const h1 = page('Session ' + id, el('p', {}, el('a', { href: '#/sessions', text: '← All sessions' })), box);
    if (!target) { box.append(el('p', { class: 'error', role: 'alert', text: 'This address lacks the session\'s computer (target=…). Open the session from the Sessions list.' })); return; }
    const q = 'computeTargetId=' + enc(target) + '&sessionId=' + enc(id);
    await loading(box, 'the transcript', async () => {
      const [meta, listing] = await Promise.all([
        api('/api/agent-sessions/sessions?limit=1&' + q, { org: true }).then((r) => r.data.sessions[0] || null, () => null),
        api('/api/agent-sessions/transcripts?' + q, { org: true })]);
      const files = listing.data.files;
      clear(box);
      if (meta && meta.title) { h1.textContent = meta.title; document.title = meta.title + ' · syncplane'; }
      box.append(sessionFacts(id, target, meta, files));
      if (!files.length) { box.append(el('p', { class: 'empty', text: 'This session has no transcript in the archive.' })); return; }
      box.append(el('p', { class: 'exports' }, ...exportButton('Export the transcript (JSON Lines)', '/api/agent-sessions/transcripts/export?' + q, 'transcript-' + id.replace(/[^A-Za-z0-9._-]/g, '_') + '.jsonl')));
      for (const f of files) {
        const sec = el('section', { class: 'transcript', 'aria-label': 'Transcript ' + f.fileId });
        const list = el('ol', { class: 'turns' });
        const more = el('div', { class: 'more' });
        sec.append(el('h2', { text: 'Transcript ' + f.fileId }), el('p', { class: 'meta', text: `${num(f.decodedBytes)} bytes, generation ${f.generation}` }), list, more);
        box.append(sec);
        const lines = async (cursor) => {
          const d = (await api('/api/agent-sessions/transcripts/lines?' + q + '&fileId=' + enc(f.fileId) + '&limit=100' + (cursor ? '&cursor=' + enc(cursor) : ''), { org: true })).data;
          for (const line of d.lines) list.append(turn(line));
          return d.nextCursor || null;
        };
        // A link to a line (from a search hit) opens the file there, that turn marked and in view.
        const here = at && atFile === f.fileId;
        if (here) sec.insertBefore(el('p', { class: 'note' }, `From line ${params.get('line') || ''}. `, el('a', { href: '#/sessions/' + enc(id) + '?target=' + enc(target), text: 'From the start' })), list);
        pager(more, await lines(here ? at : null), 'More turns', lines);
        if (here && list.firstChild) {
          list.firstChild.classList.add('target');
          list.firstChild.setAttribute('tabindex', '-1');
          list.firstChild.scrollIntoView({ block: 'start' });
        }
      }
    }, true);
  }
  // What the metadata lane knows of a session, beside its transcript files.
  function sessionFacts(id, target, s, files) {
    const tokens = s && (s.inputTokens !== null || s.outputTokens !== null) ? `${num(s.inputTokens)} in / ${num(s.outputTokens)} out` : '–';
    return el('dl', { class: 'facts' },
      fact('Session', id), fact('Computer', target),
      fact('Agent', (s && s.agent) || '–'), fact('Model', (s && s.model) || '–'),
      fact('Repository', (s && s.repository) || '–'), fact('Branch', (s && s.branch) || '–'),
      fact('Started', when(s && s.startedAt)), fact('Ended', s && s.endedAt ? when(s.endedAt) : '–'),
      fact('Tokens', tokens), fact('Cost', s && s.costUsd !== null && s.costUsd !== undefined ? '$' + Number(s.costUsd).toFixed(2) : '–'),
      fact('Transcript files', files.map((f) => f.fileId).join(', ') || 'none'));
  }
  // Text with the client's redaction placeholders ([REDACTED:rule]) shown as such.
  function redacted(text) {
    const out = [];
    let last = 0;
    for (const m of String(text).matchAll(/\[REDACTED:[a-z0-9-]+\]/g)) {
      out.push(text.slice(last, m.index), el('span', { class: 'redacted', title: 'Removed on the device before upload', text: m[0] }));
      last = m.index + m[0].length;
    }
    out.push(String(text).slice(last));
    return out;
  }
  // One JSON line as a turn: its role, its text, tool calls and results collapsed.
  function turn(line) {
    let v;
    try { v = JSON.parse(line); } catch (_) { return el('li', { class: 'turn raw' }, el('pre', { text: line })); }
    const msg = v && typeof v.message === 'object' && v.message ? v.message : v;
    const content = msg && msg.content !== undefined ? msg.content : v && v.text !== undefined ? v.text : null;
    const parts = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    const tools = parts.length && parts.every((p) => p && p.type === 'tool_result');
    const role = tools ? 'tool' : String((msg && msg.role) || (v && (v.type || v.role)) || 'event');
    const li = el('li', { class: 'turn role-' + role.replace(/[^a-z_-]/gi, '') }, el('p', { class: 'role', text: role }));
    if (!parts.length) li.append(el('details', {}, el('summary', { text: 'Event details' }), el('pre', { text: JSON.stringify(v, null, 2) })));
    for (const p of parts) {
      if (typeof p === 'string') li.append(el('p', { class: 'text' }, redacted(p)));
      else if (p && p.type === 'text') li.append(el('p', { class: 'text' }, redacted(String(p.text || ''))));
      else if (p && p.type === 'tool_use') li.append(el('details', { class: 'tool' }, el('summary', { text: 'Tool call: ' + (p.name || 'tool') }), el('pre', { text: JSON.stringify(p.input ?? p, null, 2) })));
      else if (p && p.type === 'tool_result') {
        const c = Array.isArray(p.content) ? p.content.map((x) => (x && x.text) || JSON.stringify(x)).join('\n') : typeof p.content === 'string' ? p.content : p.content === undefined ? '' : JSON.stringify(p.content);
        li.append(el('details', { class: 'tool' }, el('summary', { text: 'Tool result' + (p.is_error ? ' (error)' : '') }), el('pre', {}, redacted(c))));
      } else if (p && p.type === 'thinking') li.append(el('details', { class: 'tool' }, el('summary', { text: 'Thinking' }), el('pre', { text: String(p.thinking || '') })));
      else li.append(el('details', { class: 'tool' }, el('summary', { text: (p && p.type) || 'Part' }), el('pre', { text: JSON.stringify(p, null, 2) })));
    }
    return li;
  }

  // ---- Transcript search (issue 34) ------------------------------------------------------------
  // The query and filters live in the URL (#/transcripts?q=&target=&role=&tool=&since=&until=), so
  // a result can be shared; each hit links to its line in the session page.
  const TS_FILTERS = ['target', 'role', 'tool', 'since', 'until'];
  async function renderTranscriptSearch(params) {
    const field = (id, label, input) => el('div', { class: 'field' }, el('label', { for: id, text: label }), input);
    const q = el('input', { id: 'ts-q', type: 'search', name: 'q', value: params.get('q') || '', autocomplete: 'off', 'aria-describedby': 'ts-q-help' });
    const target = el('input', { id: 'ts-target', name: 'target', value: params.get('target') || '', placeholder: 'laptop-1', autocomplete: 'off' });
    const role = el('select', { id: 'ts-role', name: 'role' }, ['', 'user', 'assistant', 'tool'].map((r) => el('option', { value: r, text: r || 'any' })));
    role.value = params.get('role') || '';
    const tool = el('input', { id: 'ts-tool', name: 'tool', value: params.get('tool') || '', placeholder: 'Bash', autocomplete: 'off' });
    const since = el('input', { id: 'ts-since', name: 'since', type: 'date', value: params.get('since') || '' });
    const until = el('input', { id: 'ts-until', name: 'until', type: 'date', value: params.get('until') || '' });
    const results = el('div', { id: 'ts-results', 'aria-live': 'polite' });
    const form = el('form', { role: 'search', class: 'search', 'aria-label': 'Transcripts' },
      el('div', { class: 'field grow' }, el('label', { for: 'ts-q', text: 'Search transcripts' }), q,
        el('p', { id: 'ts-q-help', class: 'help', text: 'Words, "a phrase", -exclude, or, and exact code tokens (ECONNREFUSED, src/main.rs, --flag).' })),
      field('ts-target', 'Computer', target), field('ts-role', 'Role', role), field('ts-tool', 'Tool', tool),
      field('ts-since', 'From', since), field('ts-until', 'To', until),
      el('button', { type: 'submit', text: 'Search' }));
    const inputs = { q, target, role, tool, since, until };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const [k, input] of Object.entries(inputs)) if (input.value.trim()) p.set(k, input.value.trim());
      const next = '#/transcripts' + (p.toString() ? '?' + p : '');
      if (location.hash === next) transcriptSearch(results, p); else location.hash = next;
    });
    page('Transcripts', el('p', {}, el('a', { href: '#/sessions', text: '← All sessions' })), form, results);
    if (state.navigated) q.focus();
    if (q.value) await transcriptSearch(results, params);
    else results.append(el('p', { class: 'empty', text: 'Type words to search every session transcript of your organization.' }));
  }
  async function transcriptSearch(box, params) {
    const p = new URLSearchParams({ q: params.get('q') || '', limit: '20' });
    const names = { target: 'computeTargetId', role: 'role', tool: 'tool' };
    for (const k of TS_FILTERS) {
      const v = params.get(k);
      if (!v) continue;
      // Dates: from the start of `since` to the end of `until` (UTC).
      if (k === 'since') p.set('since', v + 'T00:00:00Z');
      else if (k === 'until') { const d = new Date(v + 'T00:00:00Z'); if (!isNaN(d)) p.set('until', new Date(d.getTime() + 86400000).toISOString()); } else p.set(names[k], v);
    }
    const list = el('ol', { class: 'hits' });
    const more = el('div', { class: 'more' });
    await loading(box, 'the results', async () => {
      const fetchPage = async (cursor) => {
        const p2 = new URLSearchParams(p); if (cursor) p2.set('cursor', cursor);
        return (await api('/api/agent-sessions/transcripts/search?' + p2, { org: true })).data;
      };
      // A page may hold no hit and still a cursor (it read its bound of the index): go on a few.
      let d = await fetchPage();
      for (let i = 0; !d.hits.length && d.nextCursor && i < 10; i++) d = await fetchPage(d.nextCursor);
      clear(box);
      if (!d.hits.length && !d.nextCursor) { box.append(el('p', { class: 'empty', text: `No transcript line matches “${p.get('q')}”. Try other words, or clear the filters.` })); return; }
      if (!d.hits.length) box.append(el('p', { class: 'empty', text: `No match for “${p.get('q')}” in the newest lines searched: ask for more, or narrow the filters.` }));
      box.append(list, more);
      addTranscriptHits(list, d.hits);
      pager(more, d.nextCursor, 'More results', async (cursor) => {
        const d2 = await fetchPage(cursor);
        addTranscriptHits(list, d2.hits);
        return d2.nextCursor;
      });
    }, true);
  }
  function addTranscriptHits(list, hits) {
    for (const h of hits) {
      const s = h.session;
      const href = '#/sessions/' + enc(s.sessionId) + '?target=' + enc(s.computeTargetId) + '&file=' + enc(h.fileId) + '&at=' + enc(h.linesCursor) + '&line=' + enc(h.line);
      const snippet = el('p', { class: 'snippet' });
      snippet.innerHTML = h.snippet; // escaped by the API, matches in <mark> (openapi TranscriptSearchHit.snippet)
      list.append(el('li', { class: 'hit' },
        el('h2', { class: 'hit-title' }, el('a', { href, text: s.title || s.sessionId })),
        el('p', { class: 'meta' }, el('span', { text: s.computeTargetId }), ' · ', when(h.at), ' · ', el('span', { text: 'line ' + h.line }),
          h.role ? [' · ', el('span', { class: 'role', text: h.role })] : null, h.toolName ? [' · ', el('span', { class: 'tool', text: h.toolName })] : null),
        snippet));
    }
  }

  // ---- Insights ------------------------------------------------------------------------------
  // A bar chart as SVG (presentation attributes and classes only: the policy forbids style=).
  function barChart(label, rows, series) {
    const W = 640; const H = 220; const pad = { l: 48, r: 8, t: 8, b: 28 };
    const max = Math.max(1, ...rows.flatMap((r) => series.map((s) => Number(r[s.key]) || 0)));
    const bw = (W - pad.l - pad.r) / Math.max(1, rows.length);
    const inner = bw / series.length;
    const y = (v) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
    const g = svg('g');
    for (const t of [0, 0.5, 1]) {
      const v = Math.round(max * t);
      g.append(svg('line', { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: 'grid' }),
        svg('text', { x: pad.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, num(v)));
    }
    rows.forEach((r, i) => {
      series.forEach((s, j) => {
        const v = Number(r[s.key]) || 0;
        g.append(svg('rect', { x: pad.l + i * bw + j * inner + 1, y: y(v), width: Math.max(1, inner - 2), height: Math.max(0, H - pad.b - y(v)), class: 'bar ' + s.cls },
          svg('title', {}, `${r[series.labelKey]}: ${num(v)} ${s.name}`)));
      });
      const every = Math.ceil(rows.length / 8);
      if (i % every === 0) g.append(svg('text', { x: pad.l + i * bw + bw / 2, y: H - 8, 'text-anchor': 'middle', class: 'tick' }, String(r[series.labelKey]).slice(-5)));
    });
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'chart', preserveAspectRatio: 'xMidYMid meet' }, g);
    return chart;
  }
  function hbarChart(label, rows, labelKey, key, cls) {
    const W = 640; const row = 26; const H = Math.max(1, rows.length) * row + 8; const left = 200;
    const max = Math.max(1, ...rows.map((r) => Number(r[key]) || 0));
    const g = svg('g');
    rows.forEach((r, i) => {
      const v = Number(r[key]) || 0;
      const w = (W - left - 70) * v / max;
      const name = String(r[labelKey] || 'unknown');
      g.append(svg('text', { x: left - 6, y: i * row + 20, 'text-anchor': 'end', class: 'tick' }, name.length > 30 ? '…' + name.slice(-29) : name),
        svg('rect', { x: left, y: i * row + 6, width: Math.max(1, w), height: row - 8, class: 'bar ' + cls }, svg('title', {}, `${name}: ${num(v)}`)),
        svg('text', { x: left + w + 6, y: i * row + 20, class: 'tick' }, num(v)));
    });
    return svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'chart' }, g);
  }
  function figure(id, title, chart, legend, heads, rows) {
    return el('section', { class: 'figure', 'aria-labelledby': id },
      el('h2', { id, text: title }), legend, chart,
      el('details', { class: 'numbers' }, el('summary', { text: 'The numbers behind this chart' }),
        wrapTable(title, table(title, heads, rows.map((r) => el('tr', {}, r.map((c, i) => i === 0 ? el('th', { scope: 'row', text: c }) : el('td', { class: 'num', text: c }))))))));
  }
  function legend(items) {
    return el('ul', { class: 'legend' }, items.map(([cls, text]) => el('li', {}, svg('svg', { width: 12, height: 12, 'aria-hidden': 'true' }, svg('rect', { width: 12, height: 12, class: 'bar ' + cls })), ' ' + text)));
  }
  async function renderInsights(params) {
    const days = Math.min(365, Math.max(1, Number(params.get('days')) || 30));
    const box = el('div');
    const pick = el('nav', { 'aria-label': 'Period', class: 'period' }, [7, 30, 90].map((n) => el('a', { href: '#/insights?days=' + n, 'aria-current': n === days ? 'page' : null, text: `${n} days` })));
    page('Insights', pick, box);
    await loading(box, 'insights', async () => {
      const d = (await api('/api/agent-sessions/insights?days=' + days, { org: true })).data;
      clear(box).append(el('p', { class: 'count', text: `Organization ${d.org}, the last ${d.days} days.` }));
      // Every day of the period, the days without sessions as zeros (UTC days, as the API).
      const byDay = new Map(d.perDay.map((r) => [r.day, r]));
      const perDay = [];
      for (let i = d.days - 1; i >= 0; i--) {
        const day = new Date(Date.now() - i * 86400000).toISOString().slice(0, 10);
        perDay.push(byDay.get(day) || { day, sessions: 0, activeUsers: 0, frustrated: d.frustrationOptIn ? 0 : null });
      }
      for (const r of d.perDay) if (!perDay.some((p) => p.day === r.day)) perDay.push(r);
      perDay.sort((a, b) => a.day.localeCompare(b.day));
      d.perDay = perDay;
      const total = d.perDay.reduce((a, r) => a + r.sessions, 0);
      if (!total) { box.append(el('p', { class: 'empty', text: 'No sessions in this period: choose a longer one, or check that desktop clients sync.' })); return; }
      const series = [{ key: 'sessions', name: 'sessions', cls: 's1' }, { key: 'activeUsers', name: 'active users', cls: 's2' }];
      series.labelKey = 'day';
      box.append(figure('sp-f-day', 'Sessions and active users per day', barChart('Sessions and active users per day, bars per day', d.perDay, series),
        legend([['s1', 'Sessions'], ['s2', 'Active users']]), ['Day', 'Sessions', 'Active users'], d.perDay.map((r) => [r.day, num(r.sessions), num(r.activeUsers)])));
      const tokens = d.tokensByModel.map((r) => ({ ...r, total: (r.inputTokens || 0) + (r.outputTokens || 0) }));
      box.append(figure('sp-f-model', 'Tokens by model', hbarChart('Tokens (input plus output) by model', tokens, 'model', 'total', 's1'), null,
        ['Model', 'Sessions', 'Input tokens', 'Output tokens'], tokens.map((r) => [r.model, num(r.sessions), num(r.inputTokens), num(r.outputTokens)])));
      box.append(figure('sp-f-repo', 'Sessions per repository', hbarChart('Sessions per repository', d.sessionsByRepository, 'repository', 'sessions', 's2'), null,
        ['Repository', 'Sessions'], d.sessionsByRepository.map((r) => [r.repository || 'unknown', num(r.sessions)])));
      if (d.frustrationOptIn) {
        const fs = [{ key: 'frustrated', name: 'frustrated sessions', cls: 's3' }];
        fs.labelKey = 'day';
        box.append(figure('sp-f-frus', 'Sessions with a frustration signal per day', barChart('Sessions with a frustration signal per day', d.perDay, fs), null,
          ['Day', 'Frustrated sessions'], d.perDay.map((r) => [r.day, num(r.frustrated)])));
      } else box.append(el('p', { class: 'note', text: 'The frustration signal is off: this organization has not opted in.' }));
    }, true);
  }

  // ---- Router --------------------------------------------------------------------------------
  async function route() {
    const hash = location.hash || '#/search';
    if (!hash.startsWith('#/')) return; // an in-page anchor (the skip link)
    const [pathPart, query] = hash.slice(2).split('?');
    const params = new URLSearchParams(query || '');
    const parts = pathPart.split('/').filter(Boolean).map((p) => { try { return decodeURIComponent(p); } catch (_) { return p; } });
    const section = parts[0] || 'search';
    for (const a of document.querySelectorAll('#sp-nav a')) {
      const current = section === 'doc' || section === 'readme' ? 'repos' : section === 'transcripts' ? 'sessions' : section;
      if (a.dataset.section === current) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    if (searchCtl) { searchCtl.abort(); searchCtl = null; }
    if (section === 'signin') { signin(); main.dataset.ready = 'signin'; return; }
    const org = section === 'sessions' || section === 'insights' || section === 'transcripts';
    if (!needs(org ? 'org' : 'api')) { main.dataset.ready = 'signin'; return; }
    if (!org && !state.access) {
      try { const r = await api('/api/whoami'); state.access = r.data.access; state.tenant = r.data.tenant; updateChrome(); } catch (e) {
        if (e.status === 401) { store.removeItem(KEY); updateChrome(); signin('The saved token was not accepted (401): sign in again.'); main.dataset.ready = 'signin'; return; }
      }
    }
    if (section === 'search') renderSearch(params);
    else if (section === 'repos' && parts.length >= 3) await renderRepo(parts[1], parts[2]);
    else if (section === 'repos') await renderRepos();
    else if (section === 'doc' && parts.length >= 4) await renderDoc(parts[1], parts[2], parts.slice(3).join('/'), params.get('at'));
    else if (section === 'readme' && parts.length >= 3) await renderDoc(parts[1], parts[2], null, null);
    else if (section === 'runs') await renderRuns();
    else if (section === 'sessions' && parts.length >= 2) await renderSession(parts[1], params.get('target'), params);
    else if (section === 'transcripts') await renderTranscriptSearch(params);
    else if (section === 'sessions') await renderSessions();
    else if (section === 'insights') await renderInsights(params);
    else page('Not found', el('p', {}, 'No page here. ', el('a', { href: '#/search', text: 'Go to Search' }), '.'));
    // After a navigation the focus moves to the new page's heading (not on the first load).
    if (section !== 'search' && section !== 'transcripts' && state.navigated) main.querySelector('h1')?.focus();
    main.dataset.ready = section;
  }
  document.querySelector('.skip').addEventListener('click', (ev) => { ev.preventDefault(); main.focus(); });
  document.getElementById('sp-signout').addEventListener('click', () => {
    store.removeItem(KEY); store.removeItem(ORG_KEY); state.access = null; updateChrome(); location.hash = '#/signin';
  });
  window.addEventListener('hashchange', () => { state.navigated = true; main.dataset.ready = ''; route(); });
  updateChrome();
  route();
})();
