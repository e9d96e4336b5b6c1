/** The budget simulation (property.ts, scenario.ts): the 'across' family of schedules. */

import { simulate } from './property.js';

simulate('across');
