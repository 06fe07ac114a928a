# Installs the Murano agent as a Windows service (delayed automatic start).
# Usage (elevated): .\install-windows-service.ps1 [-ConfigFile C:\ProgramData\Murano\agent.conf] [-Python python]
param(
    [string]$ConfigFile = (Join-Path $env:ProgramData 'Murano\agent.conf'),
    [string]$Python = 'python'
)
$ErrorActionPreference = 'Stop'

& $Python -m pip install --upgrade pywin32 murano-engine
if ($LASTEXITCODE -ne 0) { throw "pip install failed ($LASTEXITCODE)" }
& $Python -m pywin32_postinstall -install | Out-Null

New-Item -ItemType Directory -Force -Path (Split-Path $ConfigFile) | Out-Null
if (-not (Test-Path $ConfigFile)) {
    throw "write the agent configuration to $ConfigFile first (see agent.conf.sample)"
}
& $Python -m murano_agent.packaging.windows_service --startup delayed install
if ($LASTEXITCODE -ne 0) { throw "service registration failed ($LASTEXITCODE)" }
$escaped = $ConfigFile.Replace("'", "\'")
& $Python -c "import win32serviceutil as u; u.SetServiceCustomOption('MuranoAgent', 'config', r'$escaped')"
sc.exe failure MuranoAgent reset= 86400 actions= restart/5000/restart/5000/restart/60000 | Out-Null
Start-Service MuranoAgent
Get-Service MuranoAgent
