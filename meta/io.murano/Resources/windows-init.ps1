#ps1
# Boot script of a WindowsInstance: write the agent's config, name the
# computer, and start the "Murano Agent" service.
$ErrorActionPreference = 'Stop'
$AgentConfigBase64 = '%AGENT_CONFIG_BASE64%'
$NewHostName = '%INTERNAL_HOSTNAME%'
$AgentFolder = 'C:\Murano\Agent'
$ConfigFile = Join-Path $AgentFolder 'WindowsAgent.exe.config'

Stop-Service -Name 'Murano Agent' -ErrorAction SilentlyContinue
New-Item -ItemType Directory -Force -Path $AgentFolder | Out-Null
[IO.File]::WriteAllBytes($ConfigFile, [Convert]::FromBase64String($AgentConfigBase64))
Set-Service -Name 'Murano Agent' -StartupType Automatic
& sc.exe config 'Murano Agent' start= delayed-auto | Out-Null

if ($NewHostName -and $env:COMPUTERNAME -ne $NewHostName) {
    Rename-Computer -NewName $NewHostName -Force
    Restart-Computer -Force
} else {
    Start-Service -Name 'Murano Agent'
}
