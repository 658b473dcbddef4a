/* cdp.js as a Worker serves it from its ASSETS binding (test copy) */
window.cdp = window.cdp || function () {};
