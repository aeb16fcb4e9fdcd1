export { type DashboardConfig, dashboardConfigSchema, loadConfig } from './config';
export { type DashboardHandle, type DashboardOptions, startDashboard } from './service';
