// How the scripts run uvu on test files: through tsx, with scripts/uvu-printable.mjs preloaded (failures
// whose error has object `details`, as a SessiondError has, are printed and the suite goes on).
export const UVU = ['--import', 'tsx', '--import', './scripts/uvu-printable.mjs', 'node_modules/uvu/bin.js'];
