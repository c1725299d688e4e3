
(() => {
  'use strict';
  const selects = Array.from(document.querySelectorAll('#filters select'));
  const search = document.getElementById('f-q');
  const count = document.getElementById('f-count');
  const rows = Array.from(document.querySelectorAll('.row'));
  const PREFIX = '#f:';

  const apply = () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    for (const row of rows) {
      let keep = selects.every((s) => {
        const attr = s.dataset.attr;
        return s.value === '' || !(attr in row.dataset) || row.dataset[attr] === s.value;
      });
      if (keep && q !== '') keep = row.textContent.toLowerCase().includes(q);
      row.hidden = !keep;
      if (keep) shown += 1;
    }
    count.textContent = shown + ' of ' + rows.length + ' rows shown';
  };

  const save = () => {
    const params = new URLSearchParams();
    for (const s of selects) if (s.value !== '') params.set(s.dataset.attr, s.value);
    if (search.value !== '') params.set('q', search.value);
    const state = params.toString();
    try {
      history.replaceState(null, '', state === '' ? location.pathname : PREFIX + state);
    } catch (e) {
      // Some browsers refuse history changes for file: pages; the filters work all the same.
    }
  };

  const load = () => {
    const params = new URLSearchParams(location.hash.slice(PREFIX.length));
    for (const s of selects) {
      s.value = params.get(s.dataset.attr) || '';
      if (s.selectedIndex < 0) s.value = '';
    }
    search.value = params.get('q') || '';
  };

  const reset = () => {
    for (const s of selects) s.value = '';
    search.value = '';
    apply();
    save();
  };

  for (const s of selects) s.addEventListener('change', () => { apply(); save(); });
  search.addEventListener('input', () => { apply(); save(); });
  document.getElementById('f-reset').addEventListener('click', reset);

  // A link to a row the filters hide shows everything again.
  window.addEventListener('hashchange', () => {
    if (location.hash.startsWith(PREFIX)) {
      load();
      apply();
      return;
    }
    let id = location.hash.slice(1);
    try {
      id = decodeURIComponent(id);
    } catch (e) {
      // Not percent-encoded: use it as it is.
    }
    const target = document.getElementById(id);
    if (target && target.closest('[hidden]')) {
      const hash = location.hash;
      reset();
      history.replaceState(null, '', hash);
      target.scrollIntoView();
    }
  });

  if (location.hash.startsWith(PREFIX)) load();
  apply();
  document.body.dataset.ready = '1';
})();
