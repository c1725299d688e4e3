
(() => {
  const note = (text) => {
    const root = document.documentElement;
    root.dataset.errors = (root.dataset.errors || '') + text + '\n';
  };
  window.addEventListener('error', (e) => note('error: ' + e.message));
  document.addEventListener('securitypolicyviolation', (e) => note('csp: ' + e.violatedDirective));
})();
